"""OTLP/JSON logs -> ``ExportLogsServiceRequest``, with partial-success rejects.

The same rules as traces (``json_values``: hex ids, integers by their protobuf type, enums
by number or name, ``AnyValue``, camelCase/snake_case keys, unknown fields ignored, the
depth limit), the same error paths: a record that cannot be converted is left out and
reported by its path (``resourceLogs[0].scopeLogs[1].logRecords[3].traceId: not 32 hex
chars``), a malformed request structure raises ``OtlpDecodeError``. Unlike a span, a log
record may have no trace id and no span id (a log line outside any trace).
"""

from __future__ import annotations

from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, SeverityNumber

from tracejudge.model.errors import OtlpDecodeError
from tracejudge.otlp.json_values import (
    TOO_DEEP,
    Shape,
    enum,
    fill_request,
    get,
    id_bytes,
    parse_json_document,
    set_any,
    set_attrs,
    string,
    uint32,
    uint64,
)

__all__ = ["logs_from_json"]

_SEVERITIES = {name: int(num) for name, num in SeverityNumber.items()}
_SHAPE = Shape(
    ("resourceLogs", "resource_logs"), ("scopeLogs", "scope_logs"), ("logRecords", "log_records")
)
"""Where a request's log records are (``fill_request``)."""
# Message depth of a record's body (request > ResourceLogs > ScopeLogs > LogRecord >
# AnyValue) and of the first AnyValue of its attributes (... > KeyValue > AnyValue).
_BODY_DEPTH = 5
_RECORD_VALUE_DEPTH = 6


def _set_record(out: LogRecord, value: Any) -> None:
    """Fill one record; error paths are relative to the record (prefixed by the caller)."""
    if not isinstance(value, dict):
        raise OtlpDecodeError("", "expected a LogRecord object")
    rec = value
    out.time_unix_nano = uint64(get(rec, "timeUnixNano", "time_unix_nano"), "timeUnixNano")
    out.observed_time_unix_nano = uint64(
        get(rec, "observedTimeUnixNano", "observed_time_unix_nano"), "observedTimeUnixNano"
    )
    severity = get(rec, "severityNumber", "severity_number")
    if severity is not None:
        out.severity_number = enum(severity, _SEVERITIES, "severityNumber")  # type: ignore[assignment]
    text = get(rec, "severityText", "severity_text")
    if text:
        out.severity_text = string(text, "severityText")
    body = rec.get("body")
    if body is not None:
        set_any(out.body, body, "body", _BODY_DEPTH)
        out.body.SetInParent()
    set_attrs(out.attributes, rec.get("attributes"), "attributes", _RECORD_VALUE_DEPTH)
    dropped = get(rec, "droppedAttributesCount", "dropped_attributes_count")
    if dropped:
        out.dropped_attributes_count = uint32(dropped, "droppedAttributesCount")
    flags = rec.get("flags")
    if flags is not None:
        out.flags = uint32(flags, "flags")
    out.trace_id = id_bytes(get(rec, "traceId", "trace_id"), 32, "traceId", required=False)
    out.span_id = id_bytes(get(rec, "spanId", "span_id"), 16, "spanId", required=False)
    event_name = get(rec, "eventName", "event_name")
    if event_name:
        out.event_name = string(event_name, "eventName")


def logs_from_json(obj: Any) -> tuple[ExportLogsServiceRequest, list[str]]:
    """Convert an OTLP/JSON logs request (parsed, or the JSON text): the request without
    the records that could not be converted, and one reason per such record, naming its
    path. A malformed structure (not an object, a bad resource or scope) raises
    ``OtlpDecodeError``."""
    try:
        return _logs_from_json(obj)
    except RecursionError:
        raise OtlpDecodeError("", TOO_DEEP) from None


def _logs_from_json(obj: Any) -> tuple[ExportLogsServiceRequest, list[str]]:
    if isinstance(obj, str | bytes | bytearray):
        obj = parse_json_document(obj)
    if not isinstance(obj, dict):
        raise OtlpDecodeError("", f"expected an OTLP/JSON object, got {type(obj).__name__}")
    rejects: list[str] = []
    request = ExportLogsServiceRequest()
    fill_request(request, obj, _SHAPE, _set_record, rejects)
    return request, rejects
