"""Nothing from a backend's answer or a client's credential reaches ``/metrics``,
``/healthz`` or the log unscrubbed (issue 18, items 3 and 7; gRPC's side of 7 checked with
a real gRPC client).

A backend's error text was shown as it came in ``targets.<name>.last_error``, password,
card number and bearer token included, while the logs and the dead-letter reason were
scrubbed. And aiohttp logged every request it could not parse with a full traceback
quoting the bytes: an ``Authorization`` header of the token plus 9 KB put the token in the
log, once per request. The backend here is a real OTLP receiver (``Sink``) that answers
with the secrets; the clients are real HTTP requests on raw sockets (no HTTP library sends
an over-long header on purpose).
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.collector.collector_support import (
    LoopThread,
    Sink,
    StandInJudge,
    config,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tests.support.guards import IO_S
from tracejudge.collector import Collector
from tracejudge.collector.clock import ManualClock

PASSWORD = "hunter2-Correct-Horse-77"
CARD = "4111 1111 1111 1111"
BEARER_TOKEN = "abcdEFGH1234567890backendTOKEN"
ANSWER = json.dumps(
    {"error": "rejected", "password": PASSWORD, "card": CARD, "auth": f"Bearer {BEARER_TOKEN}"}
)
"""What the backend answers: its own text, quoting what it should not."""
SECRETS = (PASSWORD, CARD, BEARER_TOKEN)
TOKEN = "tj-collector-token-0123456789abcdefXYZ"


def _get(port: int, path: str) -> tuple[str, dict[str, Any]]:
    raw = post(port, b"", method="GET", path=path)[2].decode()
    return raw, json.loads(raw)


def test_a_backends_error_text_is_scrubbed_in_metrics_and_healthz(
    collector_factory: Any, sink: Sink
) -> None:
    """An HTTP backend refusing for good (400) and a gRPC one failing (UNAVAILABLE), both
    quoting a password, a card number and a bearer token: ``/metrics`` shows each target's
    ``last_error`` and ``/healthz`` the failing one with data waiting, with every secret
    ``[REDACTED]`` as in the logs."""
    sink.fail_http = [400]
    sink.fail_body = ANSWER.encode()
    sink.fail_grpc = [grpc.StatusCode.UNAVAILABLE] * 10_000
    sink.fail_details = ANSWER
    c = collector_factory(forward=[sink.http_url, sink.grpc_url], decision_wait_after_root=0.05)
    tid, rid = new_ids()
    assert post(c.http_port, make_request([make_span(tid, rid)]).SerializeToString())[0] == 200
    wait_for(lambda: c.stats.spans["dropped"] == 1, what="the HTTP refusal")
    assert c.decision is not None
    grpc_queue = c.decision.queues[1]
    wait_for(lambda: grpc_queue.failures >= 1, what="the gRPC failure")

    raw, metrics = _get(c.http_port, "/metrics")
    health_raw, health = _get(c.http_port, "/healthz")
    errors = [t["last_error"] for t in metrics["targets"].values()]
    assert errors[0].startswith("HTTP 400: "), errors
    assert errors[1].startswith("gRPC UNAVAILABLE: "), errors
    assert all(e.count("[REDACTED]") == 3 for e in errors), errors
    assert health["status"] == "degraded"
    assert any("[REDACTED]" in r for r in health["reasons"]), health
    for secret in SECRETS:
        assert secret not in raw
        assert secret not in health_raw
    sink.fail_grpc.clear()
    wait_for(lambda: any(s.trace_id == tid for s in sink.spans()), what="delivery once back")


def _over_long(port: int, header: bytes) -> bytes:
    """Send a request whose header is over aiohttp's 8,190-byte line limit; the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=IO_S) as s:
        s.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: collector\r\n"
            + header
            + b"\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n"
        )
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    return got


@pytest.fixture
def tokened(lt: LoopThread, sink: Sink, tmp_path: Path) -> Iterator[tuple[Collector, ManualClock]]:
    """A collector requiring a bearer token, on a clock the test moves."""
    token_file = tmp_path / "tokens"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    token_file.chmod(0o600)
    clock = ManualClock()

    async def start() -> Collector:
        c = Collector(config(sink, tmp_path, auth_token_file=token_file), StandInJudge(), clock)
        await c.start()
        return c

    c = lt.run(start())
    try:
        yield c, clock
    finally:
        lt.run(c.stop(timeout=2.0))


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name.startswith("aiohttp") or r.name == "tracejudge.collector.http"
    ]


def test_an_over_long_authorization_header_never_logs_the_token(
    lt: LoopThread,
    tokened: tuple[Collector, ManualClock],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """100 requests whose ``Authorization`` is the token plus 9 KB: each gets 400, the log
    gets one line (no traceback, no token) for all of them; after the rate window the next
    one says how many were not logged, and at stop the rest are counted."""
    c, clock = tokened
    header = b"Authorization: Bearer " + TOKEN.encode() + b"A" * 9000
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    with caplog.at_level(logging.DEBUG):
        for _ in range(100):
            assert _over_long(c.http_port, header).startswith(b"HTTP/1.0 400")
        first = _records(caplog)
        clock.advance(10.0)
        for _ in range(6):
            _over_long(c.http_port, header)
        lt.run(c.stop(timeout=2.0))
    records = _records(caplog)
    text = "\n".join(formatter.format(r) for r in records)
    assert TOKEN not in text
    assert "Traceback" not in text
    assert [r.getMessage() for r in first] == [
        "refused a malformed HTTP request from 127.0.0.1 "
        "(400 LineTooLong: Got more than 8190 bytes when reading)"
    ]
    assert len(records) == 3, text
    assert records[1].getMessage().endswith("(99 more like it since the last line)")
    assert records[2].getMessage().startswith("5 more like ")


EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def test_grpc_never_logs_the_token_of_over_long_metadata(
    tokened: tuple[Collector, ManualClock],
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The gRPC receiver's side of item 7: a real gRPC client sends the bearer token plus
    9 KB (in ``authorization`` itself, and beside a valid one), and past gRPC's 16 KiB hard
    limit. grpcio was checked, not assumed: its Python loggers (``grpc._cython.cygrpc``,
    ``grpc.aio``) log these requests only at DEBUG, without metadata, and its C core writes
    nothing about them to stderr, so its logging needs no routing through ``server_log``.
    This test is the proof, and fails the day a grpcio upgrade starts quoting metadata: every
    logger at DEBUG and the process's own stderr (fd 2) are searched for the token."""
    c, _ = tokened
    pad = "A" * 9000
    over = grpc.StatusCode.RESOURCE_EXHAUSTED
    # Between gRPC's soft (8 KiB) and hard (16 KiB) metadata limits the server refuses a
    # request at random with RESOURCE_EXHAUSTED; past the hard limit always.
    cases: list[tuple[tuple[tuple[str, str], ...], set[grpc.StatusCode | None]]] = [
        ((("authorization", f"Bearer {TOKEN}{pad}"),), {grpc.StatusCode.UNAUTHENTICATED, over}),
        ((("authorization", f"Bearer {TOKEN}"), ("x-pad", pad)), {None, over}),
        ((("authorization", f"Bearer {TOKEN}{pad * 2}"),), {over}),
        ((("authorization", f"Bearer {TOKEN}"), ("x-pad", pad * 2)), {over}),
    ]
    with caplog.at_level(logging.DEBUG):
        for metadata, expected in cases:
            for _ in range(10):
                with grpc.insecure_channel(f"127.0.0.1:{c.grpc_port}") as channel:
                    call = channel.unary_unary(EXPORT, None, None)
                    try:
                        call(b"", metadata=metadata, timeout=IO_S)
                        got: grpc.StatusCode | None = None
                    except grpc.RpcError as exc:
                        got = exc.code()
                assert got in expected, (metadata[-1][0], got)
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    text = "\n".join(formatter.format(r) for r in caplog.records)
    grpc_records = [r for r in caplog.records if r.name.startswith("grpc")]
    assert grpc_records, "grpc's loggers were not captured"
    assert {r.levelname for r in grpc_records} == {"DEBUG"}, text
    assert TOKEN not in text
    assert "Traceback" not in text
    assert TOKEN not in capfd.readouterr().err
