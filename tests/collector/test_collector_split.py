"""Splitting requests by trace: the one-trace fast path must give the general path's bytes."""

from __future__ import annotations

import os

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from tracejudge.collector.codec.otlp import resource_spans_slices, split_by_trace


def _resource_spans(trace_ids: list[bytes], empty_scope: bool = False) -> ResourceSpans:
    rs = ResourceSpans(schema_url="https://example.test/schema")
    rs.resource.attributes.add(key="service.name").value.string_value = "svc"
    if empty_scope:
        rs.scope_spans.add().scope.name = "nothing"
    ss = rs.scope_spans.add()
    ss.scope.name = "agent"
    for i, tid in enumerate(trace_ids):
        span = ss.spans.add(trace_id=tid, span_id=os.urandom(8), name=f"s{i}")
        if i:
            span.parent_span_id = os.urandom(8)
        span.attributes.add(key="k").value.int_value = i
    return rs


def test_single_trace_fragment_equals_general_split() -> None:
    """A ResourceSpans holding one trace is forwarded as its own bytes (no per-span re-framing);
    those bytes must be exactly what the per-span split builds, or forwards would differ."""
    tid, other = os.urandom(16), os.urandom(16)
    one = _resource_spans([tid, tid, tid])
    mixed = ResourceSpans()
    mixed.CopyFrom(one)
    mixed.scope_spans[0].spans.add(trace_id=other, span_id=os.urandom(8))  # general path
    fast = split_by_trace(ExportTraceServiceRequest(resource_spans=[one]))
    general = split_by_trace(ExportTraceServiceRequest(resource_spans=[mixed]))
    assert len(fast.fragments) == 1
    frag = fast.fragments[0]
    assert (frag.trace_id, frag.spans, frag.has_root) == (tid, 3, True)
    same = next(f for f in general.fragments if f.trace_id == tid)
    assert frag.data == same.data
    assert fast.accepted == 3
    assert general.accepted == 4


def test_empty_scope_and_invalid_ids_take_the_general_path() -> None:
    """Scopes with no spans are dropped and invalid spans rejected, as before the fast path."""
    tid = os.urandom(16)
    rs = _resource_spans([tid, tid], empty_scope=True)
    out = split_by_trace(ExportTraceServiceRequest(resource_spans=[rs]))
    parsed = ResourceSpans.FromString(out.fragments[0].data)
    assert [ss.scope.name for ss in parsed.scope_spans] == ["agent"]
    bad = _resource_spans([tid, tid])
    bad.scope_spans[0].spans[1].span_id = bytes(8)
    out = split_by_trace(ExportTraceServiceRequest(resource_spans=[bad]))
    assert (out.accepted, out.rejected) == (1, 1)
    assert "invalid span_id" in out.error_message


def test_raw_body_fragments_are_the_received_bytes() -> None:
    """With the request body at hand, one-trace fragments are its own ResourceSpans bytes
    (no re-serializing); they must equal what serializing the parsed message gives, and a
    body that is not plain field-1 entries must fall back rather than mis-slice."""
    t1, t2 = os.urandom(16), os.urandom(16)
    request = ExportTraceServiceRequest(
        resource_spans=[_resource_spans([t1, t1]), _resource_spans([t2, t2, t2])]
    )
    raw = request.SerializeToString()
    assert resource_spans_slices(raw) is not None
    with_raw = split_by_trace(request, raw)
    without = split_by_trace(request)
    assert [(f.trace_id, f.data, f.spans) for f in with_raw.fragments] == [
        (f.trace_id, f.data, f.spans) for f in without.fragments
    ]
    assert resource_spans_slices(raw + b"\x10\x01") is None  # a field-2 varint
    assert resource_spans_slices(raw[:-1]) is None  # truncated
    assert split_by_trace(request, raw + b"\x10\x01").fragments[1].data == without.fragments[1].data
