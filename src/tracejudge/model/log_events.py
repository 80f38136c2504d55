"""OTLP log-record events joined to their spans, so the run builder reads them as it reads
span events.

Some instrumentations put prompts and answers in OTLP *log records* rather than on the
span: the official ``opentelemetry-instrumentation-openai-v2`` in its event modes emits
``gen_ai.client.inference.operation.details`` (messages in ``gen_ai.input.messages`` /
``gen_ai.output.messages`` attributes) or the older ``gen_ai.system.message`` /
``gen_ai.user.message`` / ``gen_ai.assistant.message`` / ``gen_ai.tool.message`` /
``gen_ai.choice`` events (content in the record's *body*). Each record carries the trace
and span id of the call it belongs to.

Rather than a second reader, each record becomes an ``EventRecord`` on its span: the
event name from ``LogRecord.event_name`` (or the ``event.name`` attribute older SDKs set),
the attributes, and the body's keys as attributes (a non-map body as ``content``). The
builder's one path for event-carried messages (``model.messages.messages_from_events``)
then gives the same model-call messages that span attributes would.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs

from tracejudge import semconv as sc
from tracejudge.model.spans import EventRecord, SpanRecord
from tracejudge.otlp.records import any_value_to_python, attributes_to_dict

log = logging.getLogger("tracejudge.model")

__all__ = [
    "event_from_log_record",
    "events_by_span",
    "with_log_events",
    "with_serialized_logs",
]

_BODY_CONTENT = "content"
"""Where a body that is not a map goes (the older events' body field for message text)."""


def event_name(record: LogRecord) -> str:
    """The record's event name: ``event_name`` (OTLP 1.5+), else the ``event.name``
    attribute the Events API set before that field existed; "" for a plain log line."""
    if record.event_name:
        return record.event_name
    for kv in record.attributes:
        if kv.key == sc.FOREIGN_EVENT_NAME and kv.value.WhichOneof("value") == "string_value":
            return kv.value.string_value
    return ""


def event_from_log_record(record: LogRecord) -> EventRecord | None:
    """The span event a log record stands for, or None for a record that is no event
    (no event name). Raises ``OtlpDecodeError`` for values the decoder refuses."""
    name = event_name(record)
    if not name:
        return None
    attrs: dict[str, Any] = attributes_to_dict(record.attributes)
    attrs.pop(sc.FOREIGN_EVENT_NAME, None)
    if record.HasField("body"):
        body = any_value_to_python(record.body, "body")
        if isinstance(body, dict):
            for key, value in body.items():
                attrs.setdefault(str(key), value)
        elif body is not None:
            attrs.setdefault(_BODY_CONTENT, body)
    when = record.time_unix_nano or record.observed_time_unix_nano
    return EventRecord(name, when, attrs)


def events_by_span(resource_logs: Iterable[ResourceLogs]) -> dict[str, list[EventRecord]]:
    """Events per span id (hex) from the log records that name a span. A record whose
    values cannot be decoded is skipped with a log line (it is still forwarded)."""
    out: dict[str, list[EventRecord]] = {}
    for rl in resource_logs:
        for sl in rl.scope_logs:
            for record in sl.log_records:
                if len(record.span_id) != 8 or record.span_id == bytes(8):
                    continue
                try:
                    event = event_from_log_record(record)
                except ValueError as exc:  # OtlpDecodeError: an unsupported value
                    log.warning("log record on span %s not joined: %s", record.span_id.hex(), exc)
                    continue
                if event is not None:
                    out.setdefault(record.span_id.hex(), []).append(event)
    return out


def with_log_events(
    spans: Sequence[SpanRecord], events: dict[str, list[EventRecord]]
) -> list[SpanRecord]:
    """The spans, each with its log-record events added to its ``events`` (kept in time
    order): a new ``SpanRecord`` for a span that has some, the same one otherwise. Events
    for a span not in ``spans`` are left out (their records are still forwarded)."""
    if not events:
        return list(spans)
    out: list[SpanRecord] = []
    for span in spans:
        extra = events.get(span.span_id)
        if not extra:
            out.append(span)
            continue
        merged = list(span.events)
        merged.extend(extra)
        merged.sort(key=_time)
        out.append(replace(span, events=merged))
    return out


def _time(event: EventRecord) -> int:
    return event.time_ns


def with_serialized_logs(spans: Sequence[SpanRecord], logs: Sequence[bytes]) -> list[SpanRecord]:
    """``with_log_events`` for serialized ``ResourceLogs`` (as the collector holds them);
    a fragment that does not parse is skipped with a log line (never raises)."""
    parsed: list[ResourceLogs] = []
    for data in logs:
        try:
            parsed.append(ResourceLogs.FromString(data))
        except Exception as exc:  # DecodeError, depth limits
            log.warning("log fragment not joined: %s: %s", type(exc).__name__, exc)
    return with_log_events(spans, events_by_span(parsed))
