"""Conversations over real sockets: the real OTLP/HTTP exporter, the collector, a real OTLP
receiver standing in for Jaeger, and the real engine (one ``user_confirmation`` rule).

Three turns of one conversation (one trace each, the "yes" in turn 2, the cancellation in
turn 3) reach the backend with the same verdict on every turn's agent root, judged once;
an interleaved second conversation stays separate; a trace without a conversation id is
judged at once. The timing itself is tested on a manual clock
(test_collector_conversations.py); here only orders that cannot race are asserted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.collector.collector_support import LoopThread, Sink, attrs, wait_for
from tests.collector.conversation_support import (
    ALONE,
    CONFIRMED,
    UNCONFIRMED,
    emit_turn,
    engine,
    exporting_tracer,
)
from tracejudge import semconv as sc
from tracejudge.collector import Collector


def _verdicts(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "verdicts.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _roots(sink: Sink, roots: set[str]) -> dict[str, dict[str, Any]]:
    return {s.span_id.hex(): attrs(s) for s in sink.spans() if s.span_id.hex() in roots}


def test_a_conversation_of_three_traces_is_judged_once_and_stamped_on_each(
    collector_factory: Callable[..., Collector], sink: Sink, tmp_path: Path
) -> None:
    """The issue-9 case over OTLP/HTTP: turn 3 alone would fail; merged, it passes, and
    every turn's agent root in the backend says so."""
    c = collector_factory(judge=engine(), decision_wait_after_root=0.2, conversation_wait=1.5)
    assert "conversations judged after 1.5s quiet (at most 600s held)" in c.describe()
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{c.http_port}/v1/traces")
    provider, tracer = exporting_tracer(exporter)
    a: list[tuple[str, str]] = []
    b: list[tuple[str, str]] = []
    try:
        a.append(emit_turn(tracer, "conv-A", CONFIRMED[0], 0))
        b.append(emit_turn(tracer, "conv-B", UNCONFIRMED[0], 1))
        a.append(emit_turn(tracer, "conv-A", CONFIRMED[1], 2))
        alone = emit_turn(tracer, None, ALONE, 3)
        b.append(emit_turn(tracer, "conv-B", UNCONFIRMED[1], 4))
        a.append(emit_turn(tracer, "conv-A", CONFIRMED[2], 5))
    finally:
        provider.shutdown()
    wait_for(lambda: len(_verdicts(tmp_path)) >= 3, what="three verdicts")
    records = {r["trace_id"]: r for r in _verdicts(tmp_path)}
    assert len(_verdicts(tmp_path)) == 3  # one per conversation, one for the lone trace
    ra, rb, rl = records[a[0][0]], records[b[0][0]], records[alone[0]]
    assert (ra["verdict"], ra["trace_ids"]) == ("pass", [t for t, _ in a])
    assert (rb["verdict"], rb["trace_ids"]) == ("fail", [t for t, _ in b])
    assert rb["primary"]["code"] == "F-POLICY-NO_CONFIRMATION"
    assert rl["verdict"] == "fail"
    assert "trace_ids" not in rl
    # The lone trace was sent before conversation A's last turn, and A then waited its
    # quiet time: the lone verdict cannot come after A's.
    assert rl["decided_at"] < ra["decided_at"]

    every_root = {r for _, r in a + b} | {alone[1]}
    wait_for(lambda: len(_roots(sink, every_root)) == 6, what="six agent roots forwarded")
    roots = _roots(sink, every_root)
    for _, root in a:
        assert roots[root][sc.TRACEJUDGE_VERDICT] == "pass"
        assert roots[root][sc.GEN_AI_CONVERSATION_ID] == "conv-A"
    for _, root in b:
        assert roots[root][sc.TRACEJUDGE_VERDICT] == "fail"
        assert roots[root][sc.TRACEJUDGE_FAILURE_CODE] == "F-POLICY-NO_CONFIRMATION"
    # The rule's evaluation event is stamped once per conversation, not once per trace.
    events = [
        e
        for s in sink.spans()
        if s.trace_id.hex() in {t for t, _ in b}
        for e in s.events
        if e.name == sc.EVENT_GEN_AI_EVALUATION_RESULT
    ]
    assert len(events) == 1
    snap = c.snapshot()
    assert snap["conversations_decided"] == 2
    assert snap["traces_decided"] == 6


def test_sigterm_judges_and_forwards_held_conversations(
    collector_factory: Callable[..., Collector], sink: Sink, lt: LoopThread, tmp_path: Path
) -> None:
    """A conversation held for a quiet time that has not come is judged and forwarded on
    the graceful stop: nothing held is lost."""
    c = collector_factory(judge=engine(), decision_wait_after_root=0.2, conversation_wait=60.0)
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{c.http_port}/v1/traces")
    provider, tracer = exporting_tracer(exporter)
    try:
        turns = [emit_turn(tracer, "conv-A", t, n) for n, t in enumerate(CONFIRMED)]
    finally:
        provider.shutdown()
    wait_for(lambda: c.snapshot()["held_conversations"] == 1, what="the conversation held")
    wait_for(lambda: c.snapshot()["buffered_traces"] == 3, what="every turn held")
    assert sink.spans() == []
    lt.run(c.stop())
    roots = _roots(sink, {r for _, r in turns})
    assert {v[sc.TRACEJUDGE_VERDICT] for v in roots.values()} == {"pass"}
    assert len(roots) == 3
    assert len(sink.spans()) == 2 + 2 + 4  # every span of the three turns
    (record,) = _verdicts(tmp_path)
    assert record["trace_ids"] == [t for t, _ in turns]


def test_passthrough_forwards_at_once_and_sends_a_verdict_span_into_each_trace(
    collector_factory: Callable[..., Collector], sink: Sink, tmp_path: Path
) -> None:
    """``--passthrough`` with a conversation wait: spans leave on arrival, untouched; when
    the conversation is judged, each of its traces gets a verdict span under its root."""
    c = collector_factory(
        judge=engine(), decision_wait_after_root=0.2, conversation_wait=1.0, passthrough=True
    )
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{c.http_port}/v1/traces")
    provider, tracer = exporting_tracer(exporter)
    try:
        turns = [emit_turn(tracer, "conv-A", t, n) for n, t in enumerate(CONFIRMED)]
    finally:
        provider.shutdown()
    wait_for(lambda: len(_verdicts(tmp_path)) == 1, what="the verdict")
    verdict_spans: dict[str, dict[str, Any]] = {}

    def arrived() -> bool:
        verdict_spans.clear()
        for s in sink.spans():
            a = attrs(s)
            if sc.TRACEJUDGE_JUDGED_SPAN_ID in a:
                verdict_spans[s.trace_id.hex()] = a
        return len(verdict_spans) == 3

    wait_for(arrived, what="a verdict span per trace")
    for trace_id, root in turns:
        assert verdict_spans[trace_id][sc.TRACEJUDGE_JUDGED_SPAN_ID] == root
        assert verdict_spans[trace_id][sc.TRACEJUDGE_VERDICT] == "pass"
    judged_roots = [s for s in sink.spans() if sc.TRACEJUDGE_VERDICT in attrs(s)]
    assert all(sc.TRACEJUDGE_JUDGED_SPAN_ID in attrs(s) for s in judged_roots)
