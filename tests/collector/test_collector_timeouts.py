"""Slow and broken clients cannot hold connections (issue 12, defect 3).

A request whose Content-Length exceeds its body, or a chunked body that stops, was never
answered; 200 slowloris connections stayed open indefinitely. Clients here are raw
sockets, because no HTTP library sends such requests on purpose.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
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
from tracejudge.collector import Collector
from tracejudge.collector.grpc_receiver import GrpcLimits, grpc_options

FAST = {
    "http_idle_timeout": 0.6,
    "http_header_timeout": 0.5,
    "http_body_timeout": 0.5,
}
SLACK = 1.5
"""Seconds allowed beyond a timeout on a loaded 2-core machine."""


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.settimeout(5)
    return s


def _closed_after(s: socket.socket, started: float) -> tuple[float, bytes]:
    """Read until the server closes; returns (seconds since ``started``, what it sent)."""
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return time.monotonic() - started, got


def _body() -> bytes:
    tid, rid = new_ids()
    out: bytes = make_request([make_span(tid, rid)]).SerializeToString()
    return out


def test_slowloris_heads_are_closed_within_the_header_timeout(
    collector_factory: Callable[..., Collector],
) -> None:
    """200 connections each dribbling a request head (a header line every 0.1 s) are all
    aborted within the header timeout, and a normal client is served meanwhile."""
    c = collector_factory(**FAST)
    socks = [_connect(c.http_port) for _ in range(200)]
    started = time.monotonic()
    for s in socks:
        s.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
    stop = threading.Event()

    def dribble() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            for s in socks:
                with contextlib.suppress(OSError):
                    s.sendall(f"X-Slow-{n}: y\r\n".encode())
            time.sleep(0.1)

    feeder = threading.Thread(target=dribble, daemon=True)
    feeder.start()
    try:
        assert post(c.http_port, _body())[0] == 200
        times = [_closed_after(s, started)[0] for s in socks]
    finally:
        stop.set()
        feeder.join(5)
        for s in socks:
            s.close()
    assert max(times) < FAST["http_header_timeout"] + SLACK, max(times)
    assert c.snapshot()["http_connections"]["timed_out"] >= 200
    assert post(c.http_port, _body())[0] == 200


def test_a_connection_that_sends_nothing_is_closed_when_idle(
    collector_factory: Callable[..., Collector],
) -> None:
    """A connection that never starts a request is closed after the idle timeout."""
    c = collector_factory(**FAST)
    s = _connect(c.http_port)
    elapsed, got = _closed_after(s, time.monotonic())
    s.close()
    assert got == b""
    assert FAST["http_idle_timeout"] - 0.1 <= elapsed < FAST["http_idle_timeout"] + SLACK


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
    """A body that stops short is answered 408 within the body timeout and the
    connection is closed; nothing of it is accepted."""
    c = collector_factory(**FAST)
    s = _connect(c.http_port)
    started = time.monotonic()
    s.sendall(request_bytes)
    elapsed, got = _closed_after(s, started)
    s.close()
    assert got.startswith(b"HTTP/1.1 408"), got[:200]
    assert elapsed < FAST["http_body_timeout"] + SLACK
    assert c.stats.spans["received"] == 0


def test_keep_alive_connection_cannot_dribble_its_next_request(
    collector_factory: Callable[..., Collector],
) -> None:
    """After a served request, the same connection gets the idle and header deadlines
    again: a second head sent a line at a time is cut off."""
    c = collector_factory(**FAST)
    body = _body()
    s = _connect(c.http_port)
    s.sendall(
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    first = s.recv(65536)
    assert first.startswith(b"HTTP/1.1 200"), first
    started = time.monotonic()
    s.sendall(b"POST /v1/traces HTTP/1.1\r\n")
    closed = False
    for n in range(40):
        time.sleep(0.1)
        try:
            s.sendall(f"X-Slow-{n}: y\r\n".encode())
        except OSError:
            closed = True
            break
    elapsed, _ = _closed_after(s, started)
    s.close()
    assert closed or elapsed < FAST["http_header_timeout"] + SLACK
    assert time.monotonic() - started < FAST["http_header_timeout"] + SLACK + 0.2


def test_connections_per_client_are_capped(collector_factory: Callable[..., Collector]) -> None:
    """Beyond ``http_max_connections_per_client`` a client's new connection is refused at
    once; when one of its connections closes, it may open another."""
    c = collector_factory(http_max_connections_per_client=4, http_idle_timeout=30.0)
    held = [_connect(c.http_port) for _ in range(4)]
    wait_for(lambda: c.snapshot()["http_connections"]["open"] == 4, what="4 open")
    extra = _connect(c.http_port)
    elapsed, got = _closed_after(extra, time.monotonic())
    extra.close()
    assert got == b""
    assert elapsed < 1.0
    assert c.snapshot()["http_connections"]["refused"] == 1
    held.pop().close()
    wait_for(lambda: c.snapshot()["http_connections"]["open"] == 3, what="one closed")
    assert post(c.http_port, _body())[0] == 200
    for s in held:
        s.close()


def test_grpc_connection_without_handshake_is_dropped(
    collector_factory: Callable[..., Collector],
) -> None:
    """A TCP connection to the gRPC port that never sends the HTTP/2 preface is closed
    after ``grpc_handshake_timeout``."""
    c = collector_factory(grpc_handshake_timeout=0.5)
    s = _connect(c.grpc_port)
    s.sendall(b"PRI * HTTP/2.0\r\n")  # half a preface, then nothing
    elapsed, _ = _closed_after(s, time.monotonic())
    s.close()
    assert elapsed < 0.5 + SLACK


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
        call(_body(), timeout=5)
        wait_for(lambda: grpc.ChannelConnectivity.READY in states, what="READY")
        ready_at = states.index(grpc.ChannelConnectivity.READY)
        wait_for(
            lambda: any(st != grpc.ChannelConnectivity.READY for st in states[ready_at + 1 :]),
            timeout=5,
            what="the connection aged out",
        )
        call(_body(), timeout=5)


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
