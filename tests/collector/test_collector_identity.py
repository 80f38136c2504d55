"""OTLP identity rules: a span needs a 16-byte trace id and an 8-byte span id (neither all
zero) and an empty or 8-byte parent. Spans that break them are rejected one by one with
partial success (``rejected_spans`` + a message); the rest of the request is accepted.

Issue 12, defect 4: a protobuf span with a 0-byte trace id was accepted and forwarded with
it, and one bad id in OTLP/JSON refused the whole request with 400.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.collector.collector_support import Sink, make_request, make_span, new_ids, post, wait_for
from tests.support.guards import IO_S
from tracejudge.collector import Collector

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

BAD_IDS = {
    "empty-trace-id": {"trace_id": b""},
    "short-trace-id": {"trace_id": b"\x01" * 8},
    "zero-trace-id": {"trace_id": bytes(16)},
    "empty-span-id": {"span_id": b""},
    "long-span-id": {"span_id": b"\x02" * 16},
    "zero-span-id": {"span_id": bytes(8)},
    "short-parent": {"parent_span_id": b"\x03" * 7},
}


def _export(port: int, body: bytes, encoding: str) -> ExportTraceServiceResponse:
    if encoding == "http":
        status, _, answer = post(port, body)
        assert status == 200
        return ExportTraceServiceResponse.FromString(answer)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        raw = channel.unary_unary(EXPORT, None, None)(body, timeout=IO_S)
    assert isinstance(raw, bytes)
    return ExportTraceServiceResponse.FromString(raw)


@pytest.mark.parametrize("encoding", ["http", "grpc"])
@pytest.mark.parametrize("alone", [True, False], ids=["own-resource", "shared-resource"])
@pytest.mark.parametrize("bad", sorted(BAD_IDS))
def test_protobuf_span_with_a_bad_id_is_rejected_alone(
    bad: str,
    alone: bool,
    encoding: str,
    collector_factory: Callable[..., Collector],
    sink: Sink,
) -> None:
    """Each bad id, in a ResourceSpans of its own (the fast single-trace path that let an
    empty trace id through) or beside valid spans of another trace: rejected with a
    message naming the field; the valid trace is forwarded whole and nothing carries the
    bad id."""
    c = collector_factory()
    tid, rid = new_ids()
    good = [make_span(tid, rid), make_span(tid, parent=rid)]
    span = make_span(os.urandom(16), parent=os.urandom(8))
    for field, value in BAD_IDS[bad].items():
        setattr(span, field, value)
    if alone:
        request = make_request(good)
        request.resource_spans.extend(make_request([span]).resource_spans)
    else:
        request = make_request([*good, span])
    port = c.http_port if encoding == "http" else c.grpc_port
    answer = _export(port, request.SerializeToString(), encoding)
    assert answer.partial_success.rejected_spans == 1
    message = answer.partial_success.error_message
    assert ("trace_id" if "trace" in bad else "span_id") in message
    wait_for(lambda: len(sink.spans()) == 2, what="the valid trace")
    assert {s.trace_id for s in sink.spans()} == {tid}
    assert c.stats.spans["rejected"] == 1
    assert c.stats.spans["received"] == 2


@pytest.mark.parametrize(
    ("trace_id", "span_id", "reason"),
    [
        ("1" * 30, "2" * 16, "traceId: not 32 hex chars"),
        ("ASNFZ4mrze8BI0VniavN7w==", "2" * 16, "traceId: not 32 hex chars"),
        ("", "2" * 16, "traceId: missing"),
        ("1" * 32, "2" * 15, "spanId: not 16 hex chars"),
        ("1" * 32, "ASNFZ4mrze8=", "spanId: not 16 hex chars"),
        ("0" * 32, "2" * 16, "invalid trace_id"),
        ("1" * 32, "0" * 16, "invalid span_id"),
    ],
    ids=["short-hex", "base64-trace", "missing", "short-span", "base64-span", "zero", "zero-span"],
)
def test_json_span_with_a_bad_id_is_rejected_alone(
    trace_id: str,
    span_id: str,
    reason: str,
    collector_factory: Callable[..., Collector],
    sink: Sink,
) -> None:
    """OTLP/JSON follows the same rule: 200 with ``partialSuccess`` (the JSON mapping of
    rejected_spans, an int64 as a string), the bad span's path in the message, the valid
    span of the same request forwarded."""
    c = collector_factory()
    tid, rid = new_ids()
    spans = [
        {"traceId": tid.hex(), "spanId": rid.hex(), "name": "ok"},
        {"traceId": trace_id, "spanId": span_id, "name": "bad"},
    ]
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    status, _, body = post(c.http_port, json.dumps(doc).encode(), "application/json")
    assert status == 200, body
    partial = json.loads(body)["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert reason in partial["errorMessage"]
    wait_for(lambda: len(sink.spans()) == 1, what="the valid JSON span")
    assert sink.spans()[0].trace_id == tid
    assert c.stats.spans["rejected"] == 1


def test_many_rejections_are_counted_and_summarised(
    collector_factory: Callable[..., Collector],
) -> None:
    """The message quotes the first reasons and counts the rest, so a request of 1,000 bad
    spans gets a short answer with the exact count."""
    c = collector_factory()
    spans = [make_span(b"") for _ in range(1000)]
    status, _, body = post(c.http_port, make_request(spans).SerializeToString())
    assert status == 200
    partial = ExportTraceServiceResponse.FromString(body).partial_success
    assert partial.rejected_spans == 1000
    assert partial.error_message.endswith("(and 997 more)")
    assert len(partial.error_message) < 1000
