"""tests/support/ports.py: a reserved port is a backend that is down, nobody else's to take,
and the test's own once released; a server's announced port is read from whole lines."""

from __future__ import annotations

import errno
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.collector.collector_support import LoopThread, Sink, post
from tests.support.guards import IO_S, PROCESS_S
from tests.support.ports import SERVE_LISTENING, ReservedPort, logged, serve_ports

OPTIONS = {
    "plain": (),
    "SO_REUSEADDR": (socket.SO_REUSEADDR,),
    "SO_REUSEPORT": (socket.SO_REUSEPORT,),
    "both": (socket.SO_REUSEADDR, socket.SO_REUSEPORT),
}

# Another process binding the port as servers do (asyncio and Go set SO_REUSEADDR, gRPC
# SO_REUSEPORT too); prints the errno it got, 0 when the bind succeeded.
OTHER_PROCESS = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen()
    print(0)
except OSError as exc:
    print(exc.errno)
"""


def _bind(port: int, options: tuple[int, ...]) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        for option in options:
            s.setsockopt(socket.SOL_SOCKET, option, 1)
        s.bind(("127.0.0.1", port))
    except BaseException:
        s.close()
        raise
    return s


def test_a_reserved_port_refuses_connections(
    reserve_port: Callable[[], ReservedPort],
) -> None:
    """Connecting is refused at once, as to a backend that is down; an OTLP forward to its
    URL is refused too."""
    reserved = reserve_port()
    assert reserved.held
    assert reserved.url == f"http://127.0.0.1:{reserved.port}"
    assert reserved.address == f"127.0.0.1:{reserved.port}"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", reserved.port), timeout=IO_S).close()
    with pytest.raises(ConnectionRefusedError):
        post(reserved.port, b"")


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_nothing_else_binds_a_reserved_port(
    reserve_port: Callable[[], ReservedPort], options: tuple[int, ...]
) -> None:
    """While held, a bind of the port fails whatever reuse options the binder sets."""
    reserved = reserve_port()
    with pytest.raises(OSError, match="Address already in use") as refused:
        _bind(reserved.port, options).close()
    assert refused.value.errno == errno.EADDRINUSE


def test_another_process_cannot_take_a_reserved_port(
    reserve_port: Callable[[], ReservedPort],
) -> None:
    """What the reservation is for: the other test suite's server cannot bind it."""
    reserved = reserve_port()
    done = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(reserved.port)],
        capture_output=True, text=True, timeout=PROCESS_S, check=True,
    )  # fmt: skip
    assert int(done.stdout) == errno.EADDRINUSE, done.stdout + done.stderr


def test_after_release_the_tests_own_server_binds_it(
    reserve_port: Callable[[], ReservedPort],
) -> None:
    """``Sink.start`` takes a reserved port and releases it right before binding it: the
    sink then listens there and answers."""
    reserved = reserve_port()
    lt = LoopThread()
    sink = Sink()
    try:
        lt.run(sink.start(http_port=reserved))
        assert not reserved.held
        assert sink.http_port == reserved.port
        assert post(reserved.port, b"")[0] == 200
    finally:
        lt.run(sink.stop())
        lt.close()


def test_release_is_idempotent_and_the_with_block_releases() -> None:
    with ReservedPort() as reserved:
        inside = reserved.held
    assert (inside, reserved.held) == (True, False)
    assert reserved.release() == reserved.port  # again: nothing to do
    server = _bind(reserved.port, ())
    try:
        server.listen()
        socket.create_connection(("127.0.0.1", reserved.port), timeout=IO_S).close()
    finally:
        server.close()


def test_an_announced_port_is_read_from_whole_lines_only(tmp_path: Path) -> None:
    """A line still being written (its port number cut short) is not read; a process that
    exits without announcing fails at once, with its log."""
    log = tmp_path / "serve.log"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(PROCESS_S)
    line = "tracejudge serve: listening on OTLP/gRPC 127.0.0.1:41234, OTLP/HTTP http://127.0.0.1:"
    log.write_text(line + "4", encoding="utf-8")
    with pytest.raises(AssertionError, match="exited 0"):
        logged(gone, log, SERVE_LISTENING, "the line")
    log.write_text(line + "43210; no backend\n", encoding="utf-8")
    assert serve_ports(gone, log) == (41234, 43210)
