"""OTLP/JSON traces -> ``ExportTraceServiceRequest``, straight from ``json.loads`` output.

Everything OTLP carries is kept (links, trace state, flags, dropped counts, scope version
and attributes, schema URLs), so the collector can buffer and forward the protobuf without
losing what the sender sent, and ``records`` turns the same protobuf into ``SpanRecord``s
for ``eval``. The value rules (ids, integers, enums, ``AnyValue``, keys, nesting) are
``json_values``'; anything malformed raises ``OtlpDecodeError`` naming the exact field, e.g.
``resourceSpans[0].scopeSpans[1].spans[3].traceId: not 32 hex chars``. For a receiver,
``json_to_proto_partial`` leaves a malformed span out and reports it (OTLP partial success).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tracejudge.model.errors import OtlpDecodeError
from tracejudge.otlp.json_values import (
    TOO_DEEP,
    Shape,
    as_list,
    as_object,
    enum,
    fill_request,
    get,
    id_bytes,
    parse_json_document,
    set_attrs,
    string,
    uint32,
    uint64,
)

__all__ = ["PartialRequest", "json_to_proto", "json_to_proto_partial"]

_SPAN_KINDS = {name: int(num) for name, num in Span.SpanKind.items()}
_STATUS_CODES = {name: int(num) for name, num in Status.StatusCode.items()}
_SHAPE = Shape(
    ("resourceSpans", "resource_spans"), ("scopeSpans", "scope_spans"), ("spans", "spans")
)
"""Where a request's spans are (``fill_request``)."""
# Message depth of the first ``AnyValue`` of a span's attributes (request > ResourceSpans >
# ScopeSpans > Span > KeyValue > AnyValue), and of an event's or a link's.
_SPAN_VALUE_DEPTH = 6
_EVENT_VALUE_DEPTH = 7


def _set_span(out: Span, span: Any) -> None:
    """Fill one span; error paths are relative to the span (prefixed by the caller)."""
    if not isinstance(span, dict):
        raise OtlpDecodeError("", "expected a Span object")
    out.trace_id = id_bytes(get(span, "traceId", "trace_id"), 32, "traceId", required=True)
    out.span_id = id_bytes(get(span, "spanId", "span_id"), 16, "spanId", required=True)
    parent = id_bytes(
        get(span, "parentSpanId", "parent_span_id"), 16, "parentSpanId", required=False
    )
    if parent:
        out.parent_span_id = parent
    trace_state = get(span, "traceState", "trace_state")
    if trace_state:
        out.trace_state = string(trace_state, "traceState")
    flags = span.get("flags")
    if flags is not None:
        out.flags = uint32(flags, "flags")
    out.name = string(span.get("name", ""), "name")
    out.kind = enum(span.get("kind"), _SPAN_KINDS, "kind")  # type: ignore[assignment]
    out.start_time_unix_nano = uint64(
        get(span, "startTimeUnixNano", "start_time_unix_nano"), "startTimeUnixNano"
    )
    out.end_time_unix_nano = uint64(
        get(span, "endTimeUnixNano", "end_time_unix_nano"), "endTimeUnixNano"
    )
    set_attrs(out.attributes, span.get("attributes"), "attributes", _SPAN_VALUE_DEPTH)
    dropped = get(span, "droppedAttributesCount", "dropped_attributes_count")
    if dropped:
        out.dropped_attributes_count = uint32(dropped, "droppedAttributesCount")
    for i, ev in enumerate(as_list(span.get("events"), "events")):
        _set_event(out.events.add(), ev, f"events[{i}]")
    dropped = get(span, "droppedEventsCount", "dropped_events_count")
    if dropped:
        out.dropped_events_count = uint32(dropped, "droppedEventsCount")
    for i, link in enumerate(as_list(span.get("links"), "links")):
        _set_link(out.links.add(), link, f"links[{i}]")
    dropped = get(span, "droppedLinksCount", "dropped_links_count")
    if dropped:
        out.dropped_links_count = uint32(dropped, "droppedLinksCount")
    status = span.get("status")
    if status is not None:
        status = as_object(status, "status")
        out.status.SetInParent()
        out.status.code = enum(status.get("code"), _STATUS_CODES, "status.code")  # type: ignore[assignment]
        message = status.get("message")
        if message:
            out.status.message = string(message, "status.message")


def _set_event(out: Span.Event, value: Any, path: str) -> None:
    ev = as_object(value, path)
    out.time_unix_nano = uint64(get(ev, "timeUnixNano", "time_unix_nano"), path + ".timeUnixNano")
    out.name = string(ev.get("name", ""), path + ".name")
    set_attrs(out.attributes, ev.get("attributes"), path + ".attributes", _EVENT_VALUE_DEPTH)
    dropped = get(ev, "droppedAttributesCount", "dropped_attributes_count")
    if dropped:
        out.dropped_attributes_count = uint32(dropped, path + ".droppedAttributesCount")


def _set_link(out: Span.Link, value: Any, path: str) -> None:
    link = as_object(value, path)
    out.trace_id = id_bytes(get(link, "traceId", "trace_id"), 32, path + ".traceId", required=True)
    out.span_id = id_bytes(get(link, "spanId", "span_id"), 16, path + ".spanId", required=True)
    trace_state = get(link, "traceState", "trace_state")
    if trace_state:
        out.trace_state = string(trace_state, path + ".traceState")
    set_attrs(out.attributes, link.get("attributes"), path + ".attributes", _EVENT_VALUE_DEPTH)
    flags = link.get("flags")
    if flags is not None:
        out.flags = uint32(flags, path + ".flags")
    dropped = get(link, "droppedAttributesCount", "dropped_attributes_count")
    if dropped:
        out.dropped_attributes_count = uint32(dropped, path + ".droppedAttributesCount")


def json_to_proto(obj: Any) -> ExportTraceServiceRequest:
    """Convert an OTLP/JSON request (parsed, or the JSON text) to ``ExportTraceServiceRequest``
    (``TracesData`` has the same shape). The first malformed field raises."""
    try:
        return _json_to_proto(obj, None)
    except RecursionError:
        raise OtlpDecodeError("", TOO_DEEP) from None


@dataclass(slots=True)
class PartialRequest:
    """A converted request without the spans that could not be converted."""

    request: ExportTraceServiceRequest
    rejected: list[str] = field(default_factory=list)
    """One reason per rejected span, naming its path (``resourceSpans[0]...spans[3].traceId``)."""


def json_to_proto_partial(obj: Any) -> PartialRequest:
    """``json_to_proto`` for a receiver: a malformed *span* is left out and reported, so the
    valid spans of the request are still accepted (OTLP partial success); a malformed
    request structure (not an object, a bad resource or scope) still raises."""
    rejected: list[str] = []
    try:
        return PartialRequest(_json_to_proto(obj, rejected), rejected)
    except RecursionError:
        raise OtlpDecodeError("", TOO_DEEP) from None


def _json_to_proto(obj: Any, rejects: list[str] | None) -> ExportTraceServiceRequest:
    if isinstance(obj, str | bytes | bytearray):
        obj = parse_json_document(obj)
    if not isinstance(obj, dict):
        raise OtlpDecodeError("", f"expected an OTLP/JSON object, got {type(obj).__name__}")
    request = ExportTraceServiceRequest()
    fill_request(request, obj, _SHAPE, _set_span, rejects)
    return request
