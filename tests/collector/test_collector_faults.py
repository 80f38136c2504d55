"""Backend faults the reliability table in docs/collector.md names and no other test covers:
a throttling backend's retry hint is honoured (HTTP 429 + Retry-After, gRPC RetryInfo), a
gRPC RESOURCE_EXHAUSTED without a hint is permanent, and SIGTERM during an outage keeps the
payloads with ``--queue-dir`` (delivered once by the next start) and counts them as lost
without it (the documented cost of running without a disk queue).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from tests.collector.collector_support import (
    LoopThread,
    Sink,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tests.support.ports import ReservedPort
from tracejudge.collector import Collector


def _body() -> tuple[bytes, bytes]:
    """A two-span trace with its root: (trace id, protobuf body)."""
    tid, rid = new_ids()
    out: bytes = make_request([make_span(tid, rid), make_span(tid, parent=rid)]).SerializeToString()
    return tid, out


def test_429_retry_after_is_honoured(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """A backend answering 429 with ``Retry-After: 1`` is retried after that second, not
    after the collector's own 50 ms backoff; the trace is delivered exactly once."""
    sink.fail_http = [429]
    sink.retry_after = "1"
    c = collector_factory(retry_initial=0.05, retry_max=5.0)
    assert post(c.http_port, _body()[1])[0] == 200
    wait_for(lambda: len(sink.spans()) == 2, what="delivery after the 429")
    first, second = sink.attempt_times
    assert second - first >= 0.9
    assert len(sink.requests) == 1
    assert c.stats.spans["dropped"] == 0


def test_grpc_retry_info_is_honoured(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """gRPC RESOURCE_EXHAUSTED with ``RetryInfo`` (1 s) is retryable and waits the hint."""
    sink.fail_grpc = [grpc.StatusCode.RESOURCE_EXHAUSTED]
    sink.grpc_retry_delay = 1.0
    c = collector_factory(forward=[sink.grpc_url], retry_initial=0.05, retry_max=5.0)
    assert post(c.http_port, _body()[1])[0] == 200
    wait_for(lambda: len(sink.spans()) == 2, what="delivery after RESOURCE_EXHAUSTED")
    first, second = sink.attempt_times
    assert second - first >= 0.9
    assert c.stats.spans["dropped"] == 0


def test_grpc_resource_exhausted_without_retry_info_is_permanent(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """Without ``RetryInfo``, RESOURCE_EXHAUSTED means the backend will never take the
    batch (OTLP spec): it is dropped and counted, and the next trace goes through."""
    sink.fail_grpc = [grpc.StatusCode.RESOURCE_EXHAUSTED]
    c = collector_factory(forward=[sink.grpc_url])
    assert post(c.http_port, _body()[1])[0] == 200
    wait_for(lambda: c.stats.spans["dropped"] == 2, what="the batch dropped")
    tid, body = _body()
    assert post(c.http_port, body)[0] == 200
    wait_for(lambda: len(sink.spans()) == 2, what="the next trace")
    assert {s.trace_id for s in sink.spans()} == {tid}
    assert sink.attempts == 2


def test_stop_during_an_outage_with_the_queue_keeps_and_the_restart_delivers_once(
    reserve_port: Callable[[], ReservedPort],
    lt: LoopThread,
    collector_factory: Callable[..., Collector],
    tmp_path: Path,
) -> None:
    """With ``--queue-dir``, stopping (what SIGTERM does) while the backend is down keeps
    the judged payloads on disk; the next start on the same queue, with the backend back on
    its address, delivers them, each span exactly once (no crash happened, so the
    at-least-once window is not entered)."""
    port = reserve_port()
    backend = port.url
    first = collector_factory(forward=[backend], queue_dir=tmp_path / "q", shutdown_timeout=0.5)
    sent = {}
    for _ in range(5):
        tid, body = _body()
        assert post(first.http_port, body)[0] == 200
        sent[tid] = 2
    wait_for(lambda: first.stats.traces_decided == 5, what="the decisions")
    lt.run(first.stop(timeout=0.5))
    assert first.stats.spans["dropped"] == 0
    back = Sink()
    lt.run(back.start(http_port=port))
    try:
        collector_factory(forward=[backend], queue_dir=tmp_path / "q")
        wait_for(lambda: len(back.spans()) == 10, what="the kept payloads")
        delivered: dict[bytes, int] = {}
        for s in back.spans():
            delivered[s.trace_id] = delivered.get(s.trace_id, 0) + 1
        assert delivered == sent
    finally:
        lt.run(back.stop())


def test_stop_during_an_outage_without_the_queue_counts_and_logs_the_loss(
    reserve_port: Callable[[], ReservedPort],
    lt: LoopThread,
    collector_factory: Callable[..., Collector],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without a disk queue, what the backend has not taken by the end of the shutdown
    timeout is lost: never silently, it is logged with its count and counted as dropped."""
    down = reserve_port().url
    c = collector_factory(forward=[down], shutdown_timeout=0.5)
    for _ in range(3):
        assert post(c.http_port, _body()[1])[0] == 200
    with caplog.at_level(logging.ERROR, logger="tracejudge.collector"):
        lt.run(c.stop(timeout=0.5))
    assert c.stats.spans["dropped"] == 6
    assert any("6 spans could not be delivered" in r.getMessage() for r in caplog.records)
