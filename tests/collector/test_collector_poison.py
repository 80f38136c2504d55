"""Validate before acknowledging: one bad payload never costs other traces, or a restart.

Issue 12, defect 1: an OTLP/JSON attribute nested 33-300 levels deep was answered 200, then
failed ``ResourceSpans.FromString`` in the decision tick, losing every trace due in that
tick; with ``--queue-dir`` every restart crashed replaying it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from tests.collector.collector_support import (
    LoopThread,
    Sink,
    attrs,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tracejudge import semconv as sc
from tracejudge.collector import Collector
from tracejudge.collector.codec.otlp import TraceFragment, frame
from tracejudge.collector.storage.store import DiskStore


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(depth):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


def _json_span(tid: bytes, sid: bytes, parent: bytes = b"", **extra: Any) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": tid.hex(),
        "spanId": sid.hex(),
        "name": "step",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        **extra,
    }
    if parent:
        span["parentSpanId"] = parent.hex()
    return span


def _deep_fragment(tid: bytes, depth: int = 40) -> bytes:
    """A serialized ``ResourceSpans`` nested past the protobuf decoders' limit, as the
    collector used to buffer it (serializing never checks depth; parsing does)."""
    rs = ResourceSpans()
    span = rs.scope_spans.add().spans.add(trace_id=tid, span_id=os.urandom(8), name="deep")
    span.parent_span_id = os.urandom(8)
    value = span.attributes.add(key="deep").value
    for _ in range(depth):
        value = value.kvlist_value.values.add(key="k").value
    value.string_value = "x"
    data = rs.SerializeToString()
    with pytest.raises(Exception, match=r"MaxDepth|Error parsing"):
        ResourceSpans.FromString(data)
    return data


def _nested_text(depth: int) -> str:
    """The JSON text of ``_nested(depth)``, built as text: past ~250 levels ``json.dumps``
    itself gives up, and hostile senders write such bodies by hand."""
    head = '{"kvlistValue":{"values":[{"key":"k","value":' * depth
    return head + '{"stringValue":"x"}' + "}]}}" * depth


@pytest.mark.parametrize(("depth", "whole"), [(33, False), (100, False), (300, True)])
def test_deep_json_span_is_rejected_and_other_traces_survive(
    depth: int, whole: bool, collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """The deep span is refused per span (200 with partial success naming it), or, when
    the JSON is too deep for the JSON parser itself (300 levels), the request is refused
    with 400; either way nothing unparseable is acknowledged, and 20 other traces due in
    the same tick are judged and forwarded."""
    c = collector_factory()
    others = []
    for _ in range(20):
        tid, rid = new_ids()
        others.append(tid)
        request = make_request([make_span(tid, rid), make_span(tid, parent=rid)])
        assert post(c.http_port, request.SerializeToString())[0] == 200
    tid, rid = new_ids()
    good = json.dumps(_json_span(tid, rid))
    deep = json.dumps(_json_span(tid, os.urandom(8), rid, attributes=[]))
    deep = deep.replace(
        '"attributes": []', f'"attributes": [{{"key":"deep","value":{_nested_text(depth)}}}]'
    )
    text = f'{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{good},{deep}]}}]}}]}}'
    status, _, body = post(c.http_port, text.encode(), "application/json")
    if whole:
        assert status == 400
        assert "nested too deeply" in json.loads(body)["message"]
        expected_roots = set(others)
    else:
        assert status == 200, body
        answer = json.loads(body)["partialSuccess"]
        assert answer["rejectedSpans"] == "1"
        assert "spans[1].attributes[0]" in answer["errorMessage"]
        assert "nested too deeply" in answer["errorMessage"]
        expected_roots = {*others, tid}
    wait_for(lambda: len(sink.spans()) == 2 * 20 + (0 if whole else 1), what="valid spans")
    roots = [s for s in sink.spans() if not s.parent_span_id]
    assert {s.trace_id for s in roots} == expected_roots
    assert all(attrs(s)[sc.TRACEJUDGE_VERDICT] == "pass" for s in roots)
    assert c.stats.spans["rejected"] == (0 if whole else 1)
    assert c.stats.decision_errors == 0


def test_json_at_the_depth_limit_is_accepted_and_judged(
    collector_factory: Callable[..., Collector], sink: Sink
) -> None:
    """31 levels still fit the protobuf limit: accepted, judged, forwarded intact."""
    c = collector_factory()
    tid, rid = new_ids()
    span = _json_span(tid, rid, attributes=[{"key": "deep", "value": _nested(31)}])
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    status, _, body = post(c.http_port, json.dumps(doc).encode(), "application/json")
    assert (status, json.loads(body)) == (200, {})
    wait_for(lambda: len(sink.spans()) == 1, what="the deep-but-valid span")
    assert attrs(sink.spans()[0])[sc.TRACEJUDGE_VERDICT] == "pass"


def test_a_failing_decision_costs_only_its_own_trace(
    lt: LoopThread,
    collector_factory: Callable[..., Collector],
    sink: Sink,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Defence in depth behind the receivers' checks: a trace whose decision raises (here an
    unparseable fragment, put into the buffer directly because the receivers no longer let
    one in) is isolated. Its parseable spans go out with verdict ``error``, the fragment
    nothing can parse is counted as dropped, one error line names the trace, an error
    verdict reaches the JSON lines, and the 20 traces decided in the same tick are unharmed."""
    c = collector_factory(decision_wait=30.0, decision_wait_after_root=30.0)
    assert c.decision is not None
    decision = c.decision
    others = []
    for _ in range(20):
        tid, rid = new_ids()
        others.append(tid)
        assert post(c.http_port, make_request([make_span(tid, rid)]).SerializeToString())[0] == 200
    bad_tid, bad_root = new_ids()
    good_part = make_request([make_span(bad_tid, bad_root)]).resource_spans[0]

    async def decide_together() -> None:
        """Everything in one decision batch (what one tick does), the bad trace mid-way."""
        now = asyncio.get_running_loop().time()
        decision.buffer.add(TraceFragment(bad_tid, good_part.SerializeToString(), 1, True), now)
        decision.buffer.add(TraceFragment(bad_tid, _deep_fragment(bad_tid), 1, False), now)
        traces = decision.buffer.drain()
        traces.sort(key=lambda t: t.trace_id != bad_tid)
        traces.insert(10, traces.pop(0))
        await decision.decide_batch(traces, {})

    with caplog.at_level(logging.ERROR, logger="tracejudge.collector"):
        lt.run(decide_together())
        wait_for(lambda: len(sink.spans()) == 21, what="the other traces and the bad root")
    assert c.stats.decision_errors == 1
    by_trace = {s.trace_id: s for s in sink.spans()}
    assert set(by_trace) == {*others, bad_tid}
    assert all(attrs(by_trace[t])[sc.TRACEJUDGE_VERDICT] == "pass" for t in others)
    bad = attrs(by_trace[bad_tid])
    assert bad[sc.TRACEJUDGE_VERDICT] == "error"
    assert "DecodeError" in bad[sc.TRACEJUDGE_FAILURE_EXPLANATION]
    assert c.stats.spans["dropped"] == 1
    lines = [r for r in caplog.records if bad_tid.hex() in r.getMessage()]
    assert len(lines) == 1
    assert "not forwarded" in lines[0].getMessage()
    verdicts = [json.loads(x) for x in (tmp_path / "verdicts.jsonl").read_text().splitlines()]
    errors = [v for v in verdicts if v["trace_id"] == bad_tid.hex()]
    assert [v["verdict"] for v in errors] == ["error"]
    assert c.snapshot()["decision_errors"] == 1


def test_unreplayable_queue_rows_are_quarantined_and_start_up_continues(
    collector_factory: Callable[..., Collector],
    sink: Sink,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A queue written by a version that acknowledged a poisoned payload no longer stops
    ``serve`` from starting: the row is moved to ``quarantine/`` with a log line, the
    valid fragment beside it is replayed and delivered, and the next start is clean."""
    qdir = tmp_path / "q"
    store = DiskStore(qdir)
    bad_tid, _ = new_ids()
    good_tid, good_root = new_ids()
    good = make_request([make_span(good_tid, good_root)]).resource_spans[0].SerializeToString()
    poison = _deep_fragment(bad_tid)
    store.add_inbox([(bad_tid, poison), (good_tid, good)])
    store.close()
    with caplog.at_level(logging.ERROR, logger="tracejudge.collector"):
        c = collector_factory(queue_dir=qdir)
    wait_for(lambda: len(sink.spans()) == 1, what="the valid replayed fragment")
    assert sink.spans()[0].trace_id == good_tid
    kept = list((qdir / "quarantine").glob("inbox-*.binpb"))
    assert len(kept) == 1
    assert kept[0].read_bytes() == poison
    assert "unparseable" in kept[0].with_suffix(".txt").read_text()
    assert any("cannot be replayed" in r.getMessage() for r in caplog.records)
    assert c.stats.quarantined == 1
    assert c.stats.decision_errors == 0
    reopened = DiskStore(qdir)
    try:
        assert reopened.load_inbox() == []
    finally:
        reopened.close()


def test_protobuf_request_nested_past_the_limit_is_400(
    collector_factory: Callable[..., Collector],
) -> None:
    """On protobuf the request itself fails to parse (the request adds a level over the
    fragment), so it never reaches the buffer: 400, nothing acknowledged."""
    c = collector_factory()
    tid, _ = new_ids()
    status, _, _ = post(c.http_port, frame(_deep_fragment(tid, depth=33)))
    assert status == 400
    assert c.stats.spans["received"] == 0
