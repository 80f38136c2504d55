"""Admission as a processor: the receivers' ``TraceConsumer``, built by its factory.

Driven directly with real collaborators (the hold, a fan-out over one forward queue that is
never started, so what would be forwarded is read from it, the stamp or passthrough mode)
and a decision side that only reports its backlog. What the receivers make of a refusal is
the conformance, back-pressure and consumer tests' subject; here: what is kept, where it
goes and what is counted.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.collector.collector_support import attrs, make_request, make_span
from tracejudge import semconv as sc
from tracejudge.collector import CollectorConfig
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.component import ComponentStopped, ProcessorFactory
from tracejudge.collector.consumer import Throttled, TraceConsumer
from tracejudge.collector.exporters.fanout import FanOut
from tracejudge.collector.exporters.file_target import FileTarget
from tracejudge.collector.exporters.forward import TargetQueue
from tracejudge.collector.processors.admission import (
    Admission,
    AdmissionContext,
    AdmissionFactory,
)
from tracejudge.collector.processors.decision import scrubber_for
from tracejudge.collector.processors.hold import Admitted, TraceHold
from tracejudge.collector.processors.modes import forward_mode
from tracejudge.collector.processors.stamp import Decision
from tracejudge.collector.storage.durability import durability_for
from tracejudge.collector.telemetry.stats import Stats


class Backlog:
    """The decision side as admission reads it: a lag and decisions waiting, set by hand."""

    def __init__(self) -> None:
        self.lag = 0.0
        self.reason = ""

    def judge_lag(self) -> float:
        return self.lag

    def decisions_waiting(self) -> bool:
        return bool(self.reason)

    def waiting_reason(self) -> str:
        return self.reason


class Recorder:
    """The next consumer: the admitted batches it was handed."""

    def __init__(self) -> None:
        self.batches: list[Admitted] = []

    def consume(self, batch: Admitted) -> None:
        self.batches.append(batch)


@dataclasses.dataclass
class Stage:
    admission: Admission
    hold: TraceHold
    queue: TargetQueue
    backlog: Backlog
    stats: Stats
    clock: ManualClock


def _stage(tmp: Path, next: Recorder | None = None, **overrides: Any) -> Stage:
    """Admission in front of a real hold (its next consumer unless ``next`` is given)."""
    cfg = CollectorConfig(**{"forward": [], "grpc_port": 0, "http_port": 0, **overrides})
    cfg = cfg.validate()
    clock = ManualClock()
    stats = Stats([])
    queue = TargetQueue(
        FileTarget(tmp / "out.jsonl"),
        stats=stats,
        store=None,
        max_batch_bytes=1 << 20,
        retry_initial=0.1,
        retry_max=1.0,
    )
    hold = TraceHold(cfg, clock)
    fanout = FanOut([queue], [], durability_for(None, cfg.retry_after_hint), cfg.max_queue_bytes)
    backlog = Backlog()
    context = AdmissionContext(
        clock, stats, hold, fanout, forward_mode(cfg, scrubber_for(cfg)), backlog
    )
    factory = AdmissionFactory()
    admission = factory.create(factory.config_for(cfg), hold if next is None else next, context)
    return Stage(admission, hold, queue, backlog, stats, clock)


def _request(tid: bytes, n: int = 1) -> ExportTraceServiceRequest:
    return make_request([make_span(tid, os.urandom(8)) for _ in range(n)])


def _forwarded(queue: TargetQueue) -> list[dict[str, Any]]:
    """The spans queued for the backend, as attribute dicts."""
    out: list[dict[str, Any]] = []
    for item in queue.items:
        req = ExportTraceServiceRequest.FromString(item.payload)
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                out.extend(attrs(s) for s in ss.spans)
    return out


def test_the_factory_and_the_processor_contract(tmp_path: Path) -> None:
    """A frozen default config that the collector's defaults fill in the same; built with
    its kind; ``start``/``shutdown`` idempotent; each request handed to the next consumer
    once, as one batch of its fresh fragments; after ``shutdown`` a request is refused,
    naming the stage, and nothing of it is kept; the snapshot's keys never change."""
    factory: ProcessorFactory[Any, Any, AdmissionContext] = AdmissionFactory()
    config = factory.default_config()
    assert factory.config_for(CollectorConfig()) == config
    for field in dataclasses.fields(config):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(config, field.name, getattr(config, field.name))
    after = Recorder()
    stage = _stage(tmp_path, after)
    admission = stage.admission
    consumer: TraceConsumer = admission  # what the receivers are given
    assert admission.kind == factory.kind == "admission"
    keys = set(admission.snapshot())
    assert keys == {"spans_over_request_limits"}
    admission.start()
    admission.start()
    tid = os.urandom(16)
    admission.consume(consumer.split(_request(tid, 2).SerializeToString()))
    assert len(after.batches) == 1
    ((fragments, at),) = after.batches
    assert [(f.trace_id, f.spans) for f in fragments] == [(tid, 2)]
    assert at == stage.clock.now()
    assert stage.stats.spans["received"] == 2
    admission.shutdown()
    admission.shutdown()
    with pytest.raises(ComponentStopped, match="processor 'admission' is shut down"):
        admission.admit(consumer.split(_request(os.urandom(16)).SerializeToString()))
    assert len(after.batches) == 1
    assert stage.stats.spans["received"] == 2
    assert set(admission.snapshot()) == keys


def test_fresh_fragments_wait_in_the_hold_and_late_spans_go_straight_out(
    tmp_path: Path,
) -> None:
    """A trace not decided waits in the hold; spans of a decided trace go to the forward
    queue at once, stamped with the remembered verdict, and count as late."""
    stage = _stage(tmp_path)
    fresh, decided = os.urandom(16), os.urandom(16)
    stage.hold.decided.put(decided, Decision("fail", {}))
    result = stage.admission.ingest(make_request([make_span(fresh), make_span(decided)]))
    assert (result.accepted, result.rejected) == (2, 0)
    assert list(stage.hold.buffer.traces) == [fresh]
    forwarded = _forwarded(stage.queue)
    assert [s[sc.TRACEJUDGE_VERDICT] for s in forwarded] == ["fail"]
    assert stage.stats.spans["late"] == 1
    assert stage.stats.spans["received"] == 2


def test_passthrough_forwards_fresh_fragments_on_arrival_and_holds_them_too(
    tmp_path: Path,
) -> None:
    """Passthrough: a fresh fragment goes out at once (unstamped) and still waits in the
    hold to be judged."""
    stage = _stage(tmp_path, passthrough=True)
    tid = os.urandom(16)
    stage.admission.ingest(_request(tid, 3))
    forwarded = _forwarded(stage.queue)
    assert len(forwarded) == 3
    assert all(sc.TRACEJUDGE_VERDICT not in s for s in forwarded)
    assert list(stage.hold.buffer.traces) == [tid]


def test_a_request_over_max_traces_is_refused_before_anything_is_kept(tmp_path: Path) -> None:
    """The hold at ``max_traces``: a request bringing a new trace is refused whole (its
    late spans are not forwarded either), nothing is counted; one for a buffered trace
    still fits."""
    stage = _stage(tmp_path, max_traces=2, max_traces_per_request=2)
    held = [os.urandom(16), os.urandom(16)]
    stage.admission.ingest(make_request([make_span(t) for t in held]))
    decided = os.urandom(16)
    stage.hold.decided.put(decided, Decision("pass", {}))
    with pytest.raises(Throttled, match=r"trace buffer full \(max_traces\)") as refused:
        stage.admission.ingest(make_request([make_span(os.urandom(16)), make_span(decided)]))
    assert refused.value.retry_after == 1.0
    assert sorted(stage.hold.buffer.traces) == sorted(held)
    assert not stage.queue.items
    assert stage.stats.spans["received"] == 2
    assert stage.stats.spans["late"] == 0
    with pytest.raises(Throttled, match="trace buffer full"):
        stage.admission.check_capacity()
    stage.admission.ingest(make_request([make_span(held[0])]))
    assert stage.hold.buffer.traces[held[0]].spans == 2


def test_the_decision_sides_backlog_refuses_requests_before_parsing(tmp_path: Path) -> None:
    """Judging further behind than ``max_judge_lag``, or decisions waiting for room in a
    forward queue, refuse requests with the retry hint; with neither, there is room."""
    stage = _stage(tmp_path, max_judge_lag=5.0, retry_after_hint=2.0)
    stage.admission.check_capacity()
    stage.backlog.lag = 6.25
    with pytest.raises(Throttled, match=r"judging is 6\.2s behind \(max_judge_lag 5s\)") as lag:
        stage.admission.check_capacity()
    assert lag.value.retry_after == 2.0
    stage.backlog.lag = 5.0
    stage.backlog.reason = "forward queue for file:out.jsonl full"
    with pytest.raises(Throttled, match=r"forward queue for file:out\.jsonl full"):
        stage.admission.check_capacity()
    stage.backlog.reason = ""
    stage.admission.check_capacity()
    stage.admission.throttled()
    assert stage.stats.requests_throttled == 1


def test_spans_over_the_request_limits_are_counted_in_its_snapshot(tmp_path: Path) -> None:
    """A request over ``max_spans_per_trace``: the first spans accepted, the rest rejected
    (partial success) and counted by limit in admission's ``/metrics`` entry."""
    stage = _stage(tmp_path, max_spans_per_trace=2)
    result = stage.admission.ingest(_request(os.urandom(16), 5))
    assert (result.accepted, result.rejected) == (2, 3)
    assert "max_spans_per_trace (2)" in result.error_message
    assert stage.admission.snapshot() == {"spans_over_request_limits": {"max_spans_per_trace": 3}}
    assert stage.stats.spans["rejected"] == 3


def test_a_fragment_for_a_trace_being_decided_is_held_for_it(tmp_path: Path) -> None:
    """While a trace is being decided, its new spans wait with it (forwarded late once it
    is decided), not in the buffer."""
    stage = _stage(tmp_path, decision_wait_after_root=0.5)
    tid = os.urandom(16)
    stage.admission.ingest(_request(tid))
    stage.clock.advance(1.0)
    due = stage.hold.due(stage.clock.now())
    stage.hold.begin(due)
    stage.admission.ingest(_request(tid))
    assert stage.hold.buffer.traces == {}
    assert [(f.trace_id, f.spans) for f in stage.hold.late(due[0])] == [(tid, 1)]
