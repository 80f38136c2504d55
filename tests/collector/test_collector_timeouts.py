"""Slow and broken clients cannot hold connections (issue 12, defect 3).

A request whose Content-Length exceeds its body, or a chunked body that stops, was never
answered; 200 slowloris connections stayed open indefinitely. Clients here are raw
sockets, because no HTTP library sends such requests on purpose.
"""

from __future__ import annotations

import contextlib
import functools
import socket
from collections.abc import Callable

import grpc
import pytest

from tests.collector.collector_support import (
    LoopThread,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tests.support.guards import IO_S
from tracejudge.collector import Collector
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.receivers.grpc_receiver import GrpcLimits, grpc_options

FAST = {
    "http_idle_timeout": 0.6,
    "http_header_timeout": 0.5,
    "http_body_timeout": 0.4,
}
"""Distinct deadlines, so the one a test waits for is told apart in ``clock.deadlines()``."""


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=IO_S)
    s.settimeout(IO_S)
    return s


def _until_closed(s: socket.socket) -> bytes:
    """Read until the server closes the connection; what it sent. A server that keeps it
    open fails the test at the deadlock guard (``IO_S``), not later in an assertion."""
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return got
            got += chunk
    except ConnectionResetError:
        return got
    except TimeoutError:
        raise AssertionError(f"the server kept the connection open ({got[:200]!r})") from None


def _armed(clock: ManualClock, at: float, n: int = 1) -> Callable[[], bool]:
    """True once ``n`` timers wait for ``at`` on ``clock`` (the collector has armed them)."""
    return lambda: clock.deadlines().count(at) == n


def _open_is(c: Collector, n: int) -> bool:
    return bool(c.snapshot()["http_connections"]["open"] == n)


def _body() -> bytes:
    tid, rid = new_ids()
    out: bytes = make_request([make_span(tid, rid)]).SerializeToString()
    return out


def test_slowloris_heads_are_closed_within_the_header_timeout(
    collector_factory: Callable[..., Collector],
) -> None:
    """200 connections each dribbling a request head (a header line every 0.1 s of the
    collector's clock) are all aborted once the header timeout has passed since their
    first byte, before the idle timeout, and a normal client is served meanwhile."""
    clock = ManualClock()
    c = collector_factory(clock=clock, **FAST)
    started = clock.now()
    socks: list[socket.socket] = []
    for n in range(50, 201, 50):  # 50 at a time, each batch accepted before the next: 200
        # connects at once overflow the listen backlog on a busy machine, and the kernel drops
        # the connections it could not accept in time
        socks += [_connect(c.http_port) for _ in range(50)]
        wait_for(functools.partial(_open_is, c, n), what=f"{n} connections accepted")
    try:
        for s in socks:
            s.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
        head_due = started + FAST["http_header_timeout"]
        wait_for(_armed(clock, head_due, 200), what="200 header deadlines")
        assert post(c.http_port, _body())[0] == 200
        for n in range(4):  # up to 0.4 s: every head still within its deadline
            clock.advance(0.1)
            for s in socks:
                s.sendall(f"X-Slow-{n}: y\r\n".encode())
        assert c.snapshot()["http_connections"]["timed_out"] == 0
        clock.advance(0.15)  # 0.55 s: past the header deadline, short of the idle one
        for s in socks:
            assert _until_closed(s) == b""
    finally:
        for s in socks:
            s.close()
    assert c.snapshot()["http_connections"]["timed_out"] == 200
    assert post(c.http_port, _body())[0] == 200


def test_a_connection_that_sends_nothing_is_closed_when_idle(
    collector_factory: Callable[..., Collector],
) -> None:
    """A connection that never starts a request is closed once the idle timeout has
    passed, not before."""
    clock = ManualClock()
    c = collector_factory(clock=clock, **FAST)
    s = _connect(c.http_port)
    wait_for(_armed(clock, clock.now() + FAST["http_idle_timeout"]), what="the idle deadline")
    clock.advance(FAST["http_idle_timeout"] - 0.01)
    assert c.snapshot()["http_connections"]["open"] == 1
    assert c.snapshot()["http_connections"]["timed_out"] == 0
    clock.advance(0.02)
    assert _until_closed(s) == b""
    s.close()
    assert c.snapshot()["http_connections"]["timed_out"] == 1


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Content-Length: 1000\r\n\r\n" + b"\x0a\x05" + b"ab",
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n4\r\n\x0a\x02ab\r\n",
    ],
    ids=["short-content-length", "truncated-chunked"],
)
def test_a_stalled_body_is_answered_408_and_closed(
    request_bytes: bytes, collector_factory: Callable[..., Collector]
) -> None:
    """A body that stops short is answered 408 once the body timeout has passed and the
    connection is closed; nothing of it is accepted."""
    clock = ManualClock()
    c = collector_factory(clock=clock, **FAST)
    s = _connect(c.http_port)
    s.sendall(request_bytes)
    wait_for(_armed(clock, clock.now() + FAST["http_body_timeout"]), what="the body deadline")
    clock.advance(FAST["http_body_timeout"] + 0.01)
    got = _until_closed(s)
    s.close()
    assert got.startswith(b"HTTP/1.1 408"), got[:200]
    assert c.stats.spans["received"] == 0


def test_keep_alive_connection_cannot_dribble_its_next_request(
    collector_factory: Callable[..., Collector],
) -> None:
    """After a served request, the same connection gets the idle and header deadlines
    again: a second head sent a line at a time is cut off at the header deadline."""
    clock = ManualClock()
    c = collector_factory(clock=clock, **FAST)
    body = _body()
    s = _connect(c.http_port)
    s.sendall(
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    first = s.recv(65536)
    assert first.startswith(b"HTTP/1.1 200"), first
    s.sendall(b"POST /v1/traces HTTP/1.1\r\n")
    head_due = clock.now() + FAST["http_header_timeout"]
    wait_for(_armed(clock, head_due), what="the second head's deadline")
    for n in range(4):
        clock.advance(0.1)
        s.sendall(f"X-Slow-{n}: y\r\n".encode())
    clock.advance(0.15)
    with contextlib.suppress(OSError):  # the server may have closed mid-head: the point
        s.sendall(b"X-Slow-last: y\r\n")
    _until_closed(s)
    s.close()
    assert c.snapshot()["http_connections"]["timed_out"] == 1


def test_connections_per_client_are_capped(collector_factory: Callable[..., Collector]) -> None:
    """Beyond ``http_max_connections_per_client`` a client's new connection is refused at
    once (the collector's clock never moves here, so no deadline closed it); when one of
    its connections closes, it may open another."""
    clock = ManualClock()
    c = collector_factory(clock=clock, http_max_connections_per_client=4, http_idle_timeout=30.0)
    held = [_connect(c.http_port) for _ in range(4)]
    wait_for(lambda: c.snapshot()["http_connections"]["open"] == 4, what="4 open")
    extra = _connect(c.http_port)
    got = _until_closed(extra)
    extra.close()
    assert got == b""
    assert c.snapshot()["http_connections"]["refused"] == 1
    assert c.snapshot()["http_connections"]["timed_out"] == 0
    held.pop().close()
    wait_for(lambda: c.snapshot()["http_connections"]["open"] == 3, what="one closed")
    assert post(c.http_port, _body())[0] == 200
    for s in held:
        s.close()


def test_grpc_connection_without_handshake_is_dropped(
    collector_factory: Callable[..., Collector],
) -> None:
    """A TCP connection to the gRPC port that never sends the HTTP/2 preface is closed
    after ``grpc_handshake_timeout`` (grpc-core's timer: the test waits for the close,
    the socket's ``IO_S`` guard is 120 times the timeout, and the default is 10 s)."""
    c = collector_factory(grpc_handshake_timeout=0.5)
    s = _connect(c.grpc_port)
    s.sendall(b"PRI * HTTP/2.0\r\n")  # half a preface, then nothing
    _until_closed(s)  # grpc-core's own timer (not the collector's clock): closed, not kept
    s.close()


def test_grpc_connections_are_aged_out(
    lt: LoopThread, collector_factory: Callable[..., Collector]
) -> None:
    """With ``grpc_max_connection_age`` the server sends GOAWAY to old connections: the
    client's channel leaves READY by itself, and the next call reconnects and succeeds."""
    c = collector_factory(grpc_max_connection_age=0.5, grpc_max_connection_age_grace=0.2)
    states: list[grpc.ChannelConnectivity] = []
    with grpc.insecure_channel(f"127.0.0.1:{c.grpc_port}") as channel:
        channel.subscribe(states.append)
        call = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export", None, None
        )
        call(_body(), timeout=IO_S)
        wait_for(lambda: grpc.ChannelConnectivity.READY in states, what="READY")
        ready_at = states.index(grpc.ChannelConnectivity.READY)
        wait_for(
            lambda: any(st != grpc.ChannelConnectivity.READY for st in states[ready_at + 1 :]),
            what="the connection aged out",
        )
        call(_body(), timeout=IO_S)


def test_grpc_options_carry_the_documented_defaults() -> None:
    """The defaults documented in docs/collector.md are what grpc-core is given."""
    from tracejudge.collector import CollectorConfig

    cfg = CollectorConfig()
    opts = dict(
        grpc_options(
            4 << 20,
            GrpcLimits(
                cfg.grpc_keepalive_time,
                cfg.grpc_keepalive_timeout,
                cfg.grpc_max_connection_idle,
                cfg.grpc_max_connection_age,
                cfg.grpc_max_connection_age_grace,
                cfg.grpc_handshake_timeout,
            ),
        )
    )
    assert opts["grpc.keepalive_time_ms"] == 60_000
    assert opts["grpc.keepalive_timeout_ms"] == 20_000
    assert opts["grpc.max_connection_idle_ms"] == 300_000
    assert opts["grpc.server_handshake_timeout_ms"] == 10_000
    assert "grpc.max_connection_age_ms" not in opts
