"""OTel SDK ``ReadableSpan`` -> ``SpanRecord``.

Used in-process (tests, ``tracejudge`` judging its own spans) where the spans never went
through OTLP. The SDK numbers ``SpanKind`` from 0 (INTERNAL) while OTLP numbers it from 1,
so the kind is mapped by name, not by value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from tracejudge.model.spans import (
    SPAN_KIND_CLIENT,
    SPAN_KIND_CONSUMER,
    SPAN_KIND_INTERNAL,
    SPAN_KIND_PRODUCER,
    SPAN_KIND_SERVER,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
    EventRecord,
    SpanRecord,
)

__all__ = ["span_from_sdk", "spans_from_sdk"]

_KINDS = {
    SpanKind.INTERNAL: SPAN_KIND_INTERNAL,
    SpanKind.SERVER: SPAN_KIND_SERVER,
    SpanKind.CLIENT: SPAN_KIND_CLIENT,
    SpanKind.PRODUCER: SPAN_KIND_PRODUCER,
    SpanKind.CONSUMER: SPAN_KIND_CONSUMER,
}
_STATUS = {StatusCode.UNSET: STATUS_UNSET, StatusCode.OK: STATUS_OK, StatusCode.ERROR: STATUS_ERROR}


def _plain(value: Any) -> Any:
    # The SDK stores sequence attributes as tuples; SpanRecord uses lists like OTLP arrays.
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def _attrs(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    if not attributes:
        return {}
    return {key: _plain(value) for key, value in attributes.items()}


def span_from_sdk(span: ReadableSpan) -> SpanRecord:
    """Decode one finished (or unfinished: ``end_ns`` 0) SDK span.

    Raises ``ValueError`` for a span without a span context (the SDK never makes one).
    """
    ctx = span.context
    if ctx is None:
        raise ValueError(f"span {span.name!r} has no span context")
    parent = span.parent
    scope = span.instrumentation_scope
    return SpanRecord(
        trace_id=format(ctx.trace_id, "032x"),
        span_id=format(ctx.span_id, "016x"),
        parent_span_id=format(parent.span_id, "016x") if parent is not None else None,
        name=span.name,
        kind=_KINDS.get(span.kind, SPAN_KIND_INTERNAL),
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        status_code=_STATUS.get(span.status.status_code, STATUS_UNSET),
        status_message=span.status.description or "",
        attributes=_attrs(span.attributes),
        events=[
            EventRecord(name=ev.name, time_ns=ev.timestamp, attributes=_attrs(ev.attributes))
            for ev in span.events
        ],
        resource=_attrs(span.resource.attributes),
        scope=scope.name if scope is not None else "",
    )


def spans_from_sdk(spans: Iterable[ReadableSpan]) -> list[SpanRecord]:
    """Decode SDK spans (e.g. ``InMemorySpanExporter.get_finished_spans()``), in order."""
    return [span_from_sdk(span) for span in spans]
