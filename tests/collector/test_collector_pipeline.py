"""Receive → assemble → judge → stamp → forward, driven by the real OTel OTLP exporters."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from grpc import Compression as GrpcCompression
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Status, StatusCode

from tests.collector.collector_support import (
    Sink,
    StandInJudge,
    advance,
    attrs,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tracejudge import semconv as sc
from tracejudge.collector import Collector
from tracejudge.collector.clock import ManualClock
from tracejudge.engine.verdict import Verdict
from tracejudge.model.spans import SpanRecord


def _agent_run(exporter: SpanExporter) -> tuple[str, str, str]:
    """Emit a 3-span agent run (each span exported separately); returns trace/root/tool ids."""
    processor: SpanProcessor = SimpleSpanProcessor(exporter)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span(
        "invoke_agent refund", attributes={sc.GEN_AI_AGENT_NAME: "refund"}
    ) as root:
        with tracer.start_as_current_span("chat gpt"):
            pass
        with tracer.start_as_current_span("execute_tool refund") as tool:
            tool.set_status(Status(StatusCode.ERROR, "boom"))
    provider.shutdown()
    ctx = root.get_span_context()
    return (
        f"{ctx.trace_id:032x}",
        f"{ctx.span_id:016x}",
        f"{tool.get_span_context().span_id:016x}",
    )


@pytest.mark.parametrize("transport", ["grpc", "http", "grpc-gzip", "http-gzip"])
def test_run_is_judged_stamped_and_forwarded(
    transport: str, collector_factory: Callable[..., Collector], sink: Sink, tmp_path: Path
) -> None:
    """The core promise: a run exported by a real SDK reaches the backend whole, with the
    verdict on its root, failure codes on the cited span and evaluation events."""
    c = collector_factory()
    exporter: SpanExporter
    grpc_zip = GrpcCompression.Gzip if transport.endswith("gzip") else GrpcCompression.NoCompression
    http_zip = HttpCompression.Gzip if transport.endswith("gzip") else HttpCompression.NoCompression
    if transport.startswith("grpc"):
        exporter = GrpcExporter(
            endpoint=f"127.0.0.1:{c.grpc_port}", insecure=True, compression=grpc_zip
        )
    else:
        exporter = HttpExporter(
            endpoint=f"http://127.0.0.1:{c.http_port}/v1/traces", compression=http_zip
        )
    trace_id, root_id, tool_id = _agent_run(exporter)
    wait_for(lambda: len(sink.spans()) >= 3, what="3 forwarded spans")
    spans = {s.span_id.hex(): s for s in sink.spans()}
    assert len(spans) == 3
    assert {s.trace_id.hex() for s in spans.values()} == {trace_id}
    root = attrs(spans[root_id])
    assert root[sc.TRACEJUDGE_VERDICT] == "fail"
    assert root[sc.TRACEJUDGE_LAYER_OUTCOME] == "fail"
    assert root[sc.TRACEJUDGE_LAYER_POLICY] == "not_applicable"
    assert root[sc.TRACEJUDGE_FAILURE_CODE] == "F-TEST-ERROR"
    assert root[sc.TRACEJUDGE_FAILURE_SPAN_ID] == tool_id
    assert root[sc.TRACEJUDGE_FINDINGS_COUNT] == 1
    assert root[sc.TRACEJUDGE_RULES_VERSION] == "test-1"
    tool = spans[tool_id]
    assert attrs(tool)[sc.TRACEJUDGE_FINDING_CODES] == ["F-TEST-ERROR"]
    events = [e for e in tool.events if e.name == sc.EVENT_GEN_AI_EVALUATION_RESULT]
    assert len(events) == 1
    ev = {kv.key: kv.value for kv in events[0].attributes}
    assert ev[sc.GEN_AI_EVALUATION_NAME].string_value == "no-errors"
    assert ev[sc.GEN_AI_EVALUATION_SCORE_LABEL].string_value == "fail"
    assert ev[sc.GEN_AI_EVALUATION_SCORE_VALUE].double_value == 0.0
    assert ev[sc.GEN_AI_EVALUATION_EXPLANATION].string_value == "a span failed"
    lines = (tmp_path / "verdicts.jsonl").read_text().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["trace_id"] == trace_id
    assert record["verdict"] == "fail"
    assert record["agent"] == "refund"
    assert c.stats.spans["received"] == 3
    wait_for(lambda: c.stats.spans["forwarded"] == 3, what="forwarded count")


def test_grpc_forward_target(collector_factory: Callable[..., Collector], sink: Sink) -> None:
    """grpc:// forward URLs deliver through the raw TraceService stub."""
    c = collector_factory(forward=[sink.grpc_url])
    trace_id, root_id = new_ids()
    post(c.http_port, make_request([make_span(trace_id, root_id)]).SerializeToString())
    wait_for(lambda: len(sink.spans()) == 1, what="span over gRPC")
    assert attrs(sink.spans()[0])[sc.TRACEJUDGE_VERDICT] == "pass"


def test_decision_waits_after_root_then_forwards(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """A trace is held while spans keep coming and decided wait_after_root after the last;
    deciding earlier would judge half a run. On the manual clock: the spans come 0.15 s
    apart (0.45 s in all, past one wait), the trace is still held 0.29 s after the last,
    and decided once 0.3 s have passed."""
    clock = ManualClock()
    c = collector_factory(clock=clock, decision_wait_after_root=0.3, decision_wait=5.0)
    trace_id, root_id = new_ids()
    post(c.http_port, make_request([make_span(trace_id, root_id)]).SerializeToString())
    for _ in range(3):
        advance(c, clock, 0.15)
        child = make_span(trace_id, parent=root_id)
        post(c.http_port, make_request([child]).SerializeToString())
    advance(c, clock, 0.29)
    assert c.stats.traces_decided == 0
    assert c.snapshot()["buffered_traces"] == 1
    assert sink.spans() == []
    advance(c, clock, 0.02)
    assert c.stats.traces_decided == 1
    wait_for(lambda: len(sink.spans()) == 4, what="whole trace")
    assert attrs(next(s for s in sink.spans() if s.span_id == root_id))[sc.TRACEJUDGE_VERDICT]


def test_trace_without_root_is_decided_at_decision_wait(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """Spans whose root never arrives are still forwarded (unstamped) after decision_wait,
    not after decision_wait_after_root (manual clock)."""
    clock = ManualClock()
    c = collector_factory(clock=clock, decision_wait_after_root=0.1, decision_wait=0.6)
    trace_id, _ = new_ids()
    orphan = make_span(trace_id, parent=b"\x01" * 8)
    post(c.http_port, make_request([orphan]).SerializeToString())
    advance(c, clock, 0.59)
    assert c.stats.traces_decided == 0
    advance(c, clock, 0.02)
    assert c.stats.traces_decided == 1
    wait_for(lambda: len(sink.spans()) == 1, what="orphan span")
    assert sc.TRACEJUDGE_VERDICT not in attrs(sink.spans()[0])


def test_late_span_carries_cached_verdict(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """A span arriving after the decision is forwarded at once, marked late, with the
    verdict its trace already got (not a second, different judgement)."""
    judge_calls: list[int] = []
    from tests.collector.collector_support import StandInJudge

    judge = StandInJudge()
    c = collector_factory(judge=judge)
    trace_id, root_id = new_ids()
    bad = make_span(trace_id, parent=root_id, error=True)
    post(c.http_port, make_request([make_span(trace_id, root_id), bad]).SerializeToString())
    wait_for(lambda: len(sink.spans()) == 2, what="first decision")
    late = make_span(trace_id, parent=root_id)
    post(c.http_port, make_request([late]).SerializeToString())
    wait_for(lambda: len(sink.spans()) == 3, what="late span")
    got = attrs(next(s for s in sink.spans() if s.span_id == late.span_id))
    assert got[sc.TRACEJUDGE_LATE] is True
    assert got[sc.TRACEJUDGE_VERDICT] == "fail"
    assert judge.calls == [2]
    assert c.stats.spans["late"] == 1
    assert judge_calls == []


def test_duplicate_span_ids_and_many_traces_in_one_request(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """A batch mixing traces is split per trace; duplicate span ids neither crash nor lose
    spans (both copies are forwarded)."""
    c = collector_factory()
    spans = []
    ids = []
    for _ in range(20):
        tid, rid = new_ids()
        ids.append(tid)
        spans += [make_span(tid, rid), make_span(tid, rid), make_span(tid, parent=rid)]
    post(c.http_port, make_request(spans).SerializeToString())
    wait_for(lambda: len(sink.spans()) == 60, what="60 spans")
    assert c.stats.traces_decided == 20


def test_every_copy_of_a_duplicated_span_is_stamped_alike(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """A client that retries an export (its first try timed out but arrived) sends the
    spans twice; when both copies arrive before the decision, both are forwarded, and both
    must carry the verdict, outcome events and cited codes. Only the first copy used to be
    stamped, so the backend held a root with the verdict and the same root without it
    (found by the malformed-OTLP corpus, ``genai-*`` entries sent over HTTP then gRPC)."""
    c = collector_factory(decision_wait_after_root=0.3)
    tid, rid = new_ids()
    body = make_request([make_span(tid, rid), make_span(tid, parent=rid, error=True)])
    assert post(c.http_port, body.SerializeToString())[0] == 200
    assert post(c.http_port, body.SerializeToString())[0] == 200  # the retry
    wait_for(lambda: len(sink.spans()) == 4, what="both copies of both spans")
    assert c.stats.traces_decided == 1
    roots = [s for s in sink.spans() if not s.parent_span_id]
    failing = [s for s in sink.spans() if s.parent_span_id]
    assert [attrs(s)[sc.TRACEJUDGE_VERDICT] for s in roots] == ["fail", "fail"]
    events = [len(s.events) for s in failing]  # the outcome cites the failing span
    assert events[0] == events[1] >= 1
    assert [attrs(s)[sc.TRACEJUDGE_FINDING_CODES] for s in failing] == [["F-TEST-ERROR"]] * 2
    assert all(sc.TRACEJUDGE_LATE not in attrs(s) for s in sink.spans())


def test_span_arriving_while_its_trace_is_being_decided_is_not_judged_twice(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """Decisions run in chunks with the loop free in between; a span for a trace already
    taken for deciding is held and forwarded late with that verdict, never starting a
    second, partial judgement of the same trace."""
    traces = [new_ids() for _ in range(12)]
    last_tid, last_rid = traces[-1]
    extra = make_span(last_tid, parent=last_rid)

    class IngestingJudge(StandInJudge):
        collector: Collector | None = None

        def judge_spans(self, spans: Sequence[SpanRecord]) -> list[Verdict]:
            if not self.calls and self.collector is not None and self.collector.admission:
                self.collector.admission.ingest(make_request([extra]))
            return super().judge_spans(spans)

    judge = IngestingJudge()
    c = collector_factory(judge=judge)
    judge.collector = c
    spans = [make_span(tid, rid) for tid, rid in traces]
    post(c.http_port, make_request(spans).SerializeToString())
    wait_for(lambda: len(sink.spans()) == 13, what="13 spans")
    assert c.stats.traces_decided == 12
    assert len(judge.calls) == 12
    late = next(s for s in sink.spans() if s.span_id == extra.span_id)
    assert attrs(late)[sc.TRACEJUDGE_LATE] is True
    assert c.stats.spans["late"] == 1
    assert c.decision is not None
    assert not c.decision.buffer.traces
