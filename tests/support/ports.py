"""Loopback ports for tests that run beside other test suites on one machine.

A port "picked free" (bind port 0, read it, close the socket) and bound seconds later is not
this test's: the release check runs two ``make test`` side by side, and the other suite's
servers bind ports the kernel hands out too. In that window the other suite can take the
port, and the test fails with "address already in use", or a backend meant to be down
answers as somebody else's live server. So:

- a server the test starts on *some* port binds port 0 and the test reads where it listens
  (``Sink.start``, ``Collector``'s ``grpc_port``/``http_port``, ``tracejudge serve``'s
  start-up line: ``serve_ports``);
- a port the test needs before anything listens on it (a backend that is down, then comes
  back on the same address) is a ``ReservedPort``: bound, never listening, for as long as
  the test holds it. Connecting to it is refused (a reliable "backend down") and no other
  socket can bind it meanwhile: it sets neither SO_REUSEADDR nor SO_REUSEPORT, so every
  other bind of that port fails. ``release()`` is called immediately before the test's own
  server binds the port; what remains of the window is the few microseconds between the
  close and that bind (for a server in a subprocess, its start-up: see its comment).
"""

from __future__ import annotations

import re
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.guards import PROCESS_S, WAIT_S, eventually

LOOPBACK = "127.0.0.1"


class ReservedPort:
    """A TCP port on 127.0.0.1 held by this test: bound, not listening, until ``release()``
    (or the end of its ``with`` block, or of the test: the ``reserve_port`` fixture)."""

    def __init__(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((LOOPBACK, 0))
            self.port: int = int(sock.getsockname()[1])
        except BaseException:
            sock.close()
            raise
        self._sock: socket.socket | None = sock

    @property
    def host(self) -> str:
        return LOOPBACK

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``."""
        return f"{LOOPBACK}:{self.port}"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: a forward URL that is refused while the port is held."""
        return f"http://{self.address}"

    @property
    def held(self) -> bool:
        return self._sock is not None

    def release(self) -> int:
        """Let the port go (call it immediately before the test's server binds it); returns
        the port. Releasing twice is a no-op."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        return self.port

    def __enter__(self) -> ReservedPort:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"ReservedPort({self.port}, {'held' if self.held else 'released'})"


SERVE_LISTENING = re.compile(
    r"listening on OTLP/gRPC 127\.0\.0\.1:(\d+), OTLP/HTTP http://127\.0\.0\.1:(\d+)"
)
"""``tracejudge serve``'s start-up line (stderr) without TLS: the gRPC and HTTP ports."""


def logged(
    proc: subprocess.Popen[Any],
    log: Path,
    pattern: re.Pattern[str],
    what: str,
    timeout: float = WAIT_S,
) -> re.Match[str]:
    """Wait until a whole line of the file ``proc`` logs to matches ``pattern`` (a server
    started on port 0 saying where it listens); fail at once, with the log, if ``proc``
    exits first. Only complete lines are searched: a port number still being written is
    not read."""

    def search() -> re.Match[str] | None:
        text = log.read_text(encoding="utf-8", errors="replace")
        found = pattern.search(text[: text.rfind("\n") + 1])
        if found is None and proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited {proc.returncode}:\n{text}")
        return found

    return eventually(search, what=what, timeout=timeout)


def serve_ports(proc: subprocess.Popen[Any], log: Path) -> tuple[int, int]:
    """The (gRPC, HTTP) ports a ``tracejudge serve`` started with ``--grpc-port 0
    --http-port 0`` and its stderr in ``log`` says it listens on."""
    found = logged(proc, log, SERVE_LISTENING, "serve's listening line")
    return int(found.group(1)), int(found.group(2))


def start_serve(
    argv: Sequence[str], log: Path, **popen: Any
) -> tuple[subprocess.Popen[Any], int, int]:
    """Start ``argv``, a ``tracejudge serve`` on ``--grpc-port 0 --http-port 0``, with its
    stderr to ``log`` (a file: a pipe nobody reads can block it) and ``popen`` passed on;
    returns it and the (gRPC, HTTP) ports its start-up line names. One that exits first
    fails at once with its log; one that never says is killed."""
    with log.open("w") as err:
        proc = subprocess.Popen(list(argv), stderr=err, **popen)
    try:
        grpc_port, http_port = serve_ports(proc, log)
    except BaseException:
        proc.kill()
        proc.wait(PROCESS_S)
        raise
    return proc, grpc_port, http_port
