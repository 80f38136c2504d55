"""OTLP/JSON documents for the codec's tests: a traces request and a logs request with
the same fields, the protobuf each must become, and the table of malformations both
refuse alike (``MALFORMED``)."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

TID = "5B8EFFF798038103D269B633813FC60C"  # upper case: hex ids are case-insensitive
SID = "eee19b7ec3c1b174"
PARENT = "aaaabbbbccccdddd"
SPAN_PATH = "resourceSpans[0].scopeSpans[0].spans[1]"
RECORD_PATH = "resourceLogs[0].scopeLogs[0].logRecords[1]"


def _attrs() -> list[dict[str, Any]]:
    return [
        {"key": "s", "value": {"stringValue": "refund"}},
        {"key": "u", "value": {"stringValue": "héllo"}},
        {"key": "i", "value": {"intValue": "-9223372036854775808"}},
        {"key": "j", "value": {"intValue": 42}},
        {"key": "b", "value": {"boolValue": True}},
        {"key": "d", "value": {"doubleValue": "Infinity"}},
        {"key": "x", "value": {"bytesValue": "AAEC"}},
        {"key": "a", "value": {"arrayValue": {"values": [{"intValue": "1"}, {}]}}},
        {"key": "k", "value": {"kvlistValue": {"values": [{"key": "in", "value": {}}]}}},
        {"key": "n"},
    ]


def span_doc(name: str) -> dict[str, Any]:
    return {
        "traceId": TID,
        "spanId": SID,
        "parentSpanId": PARENT,
        "traceState": "k=v",
        "flags": 257,
        "name": name,
        "kind": "SPAN_KIND_CLIENT",
        "startTimeUnixNano": "1544712660000000000",
        "endTimeUnixNano": 1544712661000000000,
        "attributes": _attrs(),
        "droppedAttributesCount": 1,
        "events": [{"timeUnixNano": "1544712660500000000", "name": "e", "attributes": _attrs()}],
        "links": [{"traceId": TID, "spanId": PARENT, "flags": 1, "attributes": _attrs()}],
        "status": {"code": 2, "message": "boom"},
    }


def record_doc(body: str) -> dict[str, Any]:
    return {
        "timeUnixNano": "1544712660000000000",
        "observedTimeUnixNano": 1544712660000000001,
        "severityNumber": "SEVERITY_NUMBER_INFO",
        "severityText": "INFO",
        "body": {"stringValue": body},
        "attributes": _attrs(),
        "droppedAttributesCount": 1,
        "flags": 257,
        "traceId": TID,
        "spanId": SID,
        "eventName": "gen_ai.choice",
    }


_RESOURCE = {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]}
_SCOPE = {"name": "tracejudge", "version": "1.0", "attributes": _attrs()}


def traces_doc(second: dict[str, Any]) -> dict[str, Any]:
    """A request of two spans, ``second`` the one under test."""
    scope = {"scope": _SCOPE, "spans": [span_doc("good"), second], "schemaUrl": "https://s"}
    return {"resourceSpans": [{"resource": _RESOURCE, "scopeSpans": [scope]}]}


def logs_doc(second: dict[str, Any]) -> dict[str, Any]:
    """A logs request of two records, ``second`` the one under test."""
    scope = {"scope": _SCOPE, "logRecords": [record_doc("good"), second], "schemaUrl": "https://s"}
    return {"resourceLogs": [{"resource": _RESOURCE, "scopeLogs": [scope]}]}


def body(doc: dict[str, Any]) -> bytes:
    """The bytes a sender posts (``ensure_ascii``: a lone surrogate stays an escape)."""
    return json.dumps(doc).encode()


# --- the protobuf every entry must produce ----------------------------------------------


def _kv(key: str, value: AnyValue | None = None) -> KeyValue:
    return KeyValue(key=key, value=value) if value is not None else KeyValue(key=key)


def _expected_attrs() -> list[KeyValue]:
    from opentelemetry.proto.common.v1.common_pb2 import ArrayValue, KeyValueList

    return [
        _kv("s", AnyValue(string_value="refund")),
        _kv("u", AnyValue(string_value="héllo")),
        _kv("i", AnyValue(int_value=-(2**63))),
        _kv("j", AnyValue(int_value=42)),
        _kv("b", AnyValue(bool_value=True)),
        _kv("d", AnyValue(double_value=float("inf"))),
        _kv("x", AnyValue(bytes_value=b"\x00\x01\x02")),
        _kv("a", AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1), AnyValue()]))),
        _kv("k", AnyValue(kvlist_value=KeyValueList(values=[_kv("in", AnyValue())]))),
        _kv("n"),
    ]


def _expected_span(name: str) -> Span:
    tid, sid, parent = bytes.fromhex(TID), bytes.fromhex(SID), bytes.fromhex(PARENT)
    return Span(
        trace_id=tid,
        span_id=sid,
        parent_span_id=parent,
        trace_state="k=v",
        flags=257,
        name=name,
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=1544712660000000000,
        end_time_unix_nano=1544712661000000000,
        attributes=_expected_attrs(),
        dropped_attributes_count=1,
        events=[
            Span.Event(time_unix_nano=1544712660500000000, name="e", attributes=_expected_attrs())
        ],
        links=[Span.Link(trace_id=tid, span_id=parent, flags=1, attributes=_expected_attrs())],
        status=Status(code=Status.STATUS_CODE_ERROR, message="boom"),
    )


def _expected_scope() -> InstrumentationScope:
    return InstrumentationScope(name="tracejudge", version="1.0", attributes=_expected_attrs())


_EXPECTED_RESOURCE = Resource(attributes=[_kv("service.name", AnyValue(string_value="agent"))])


def expected_traces(*names: str) -> ExportTraceServiceRequest:
    """The protobuf of ``traces_doc`` with the spans named ``names``."""
    scope = ScopeSpans(
        scope=_expected_scope(),
        spans=[_expected_span(n) for n in names],
        schema_url="https://s",
    )
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=_EXPECTED_RESOURCE, scope_spans=[scope])]
    )


def _expected_record(body: str) -> LogRecord:
    return LogRecord(
        time_unix_nano=1544712660000000000,
        observed_time_unix_nano=1544712660000000001,
        severity_number=9,  # type: ignore[arg-type]  # SEVERITY_NUMBER_INFO
        severity_text="INFO",
        body=AnyValue(string_value=body),
        attributes=_expected_attrs(),
        dropped_attributes_count=1,
        flags=257,
        trace_id=bytes.fromhex(TID),
        span_id=bytes.fromhex(SID),
        event_name="gen_ai.choice",
    )


def expected_logs(*bodies: str) -> ExportLogsServiceRequest:
    """The protobuf of ``logs_doc`` with the records whose bodies are ``bodies``."""
    scope = ScopeLogs(
        scope=_expected_scope(),
        log_records=[_expected_record(b) for b in bodies],
        schema_url="https://s",
    )
    return ExportLogsServiceRequest(
        resource_logs=[ResourceLogs(resource=_EXPECTED_RESOURCE, scope_logs=[scope])]
    )


# --- malformed input: one rule, one error, every entry ----------------------------------


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(levels):
        value = {"arrayValue": {"values": [value]}}
    return value


def attr(value: Any) -> list[dict[str, Any]]:
    return [{"key": "k", "value": value}]


_DEEP = (
    "attributes[0].value"
    + ".arrayValue.values[0]" * 47
    + ".arrayValue: values nested too deeply (protobuf decoders refuse messages nested "
    "deeper than 100 levels)"
)

# (span field, log record field, bad value, the error relative to the span or record, with
# {field} standing for the field's name). Spans and log records put the first AnyValue of
# their attributes at the same message depth, so even the depth limit falls alike.
MALFORMED: dict[str, tuple[str, str, Any, str]] = {
    "bad hex id": ("traceId", "traceId", "zz" * 16, "{field}: not 32 hex chars"),
    "base64 id": ("spanId", "spanId", "7uGbfsPBsXQ=", "{field}: not 16 hex chars"),
    "short id": ("traceId", "traceId", "5b8e", "{field}: not 32 hex chars"),
    "id not a string": ("spanId", "spanId", 12, "{field}: not 16 hex chars"),
    "int64 overflow": (
        "attributes",
        "attributes",
        attr({"intValue": "9223372036854775808"}),
        "{field}[0].value.intValue: integer out of the 64-bit range: '9223372036854775808'",
    ),
    "int64 as a fraction": (
        "attributes",
        "attributes",
        attr({"intValue": 1.5}),
        "{field}[0].value.intValue: not an integer: 1.5",
    ),
    "negative time": (
        "startTimeUnixNano",
        "timeUnixNano",
        "-1",
        "{field}: integer out of the 64-bit range: '-1'",
    ),
    "time not a number": (
        "endTimeUnixNano",
        "observedTimeUnixNano",
        "soon",
        "{field}: not an integer: 'soon'",
    ),
    "flags beyond uint32": (
        "flags",
        "flags",
        2**32,
        "{field}: integer out of the 32-bit range: 4294967296",
    ),
    "negative dropped count": (
        "droppedAttributesCount",
        "droppedAttributesCount",
        -1,
        "{field}: integer out of the 32-bit range: -1",
    ),
    "unknown enum name": (
        "kind",
        "severityNumber",
        "LOUDLY",
        "{field}: unknown enum value 'LOUDLY'",
    ),
    "enum beyond int32": (
        "kind",
        "severityNumber",
        2**40,
        "{field}: enum value out of the 32-bit range: 1099511627776",
    ),
    "enum of a wrong type": ("kind", "severityNumber", [1], "{field}: not an enum value: [1]"),
    "nested too deep": ("attributes", "attributes", attr(nested(60)), _DEEP),
    "string of a wrong type": (
        "name",
        "severityText",
        5,
        "{field}: expected a string, got int",
    ),
    "lone surrogate": (
        "attributes",
        "attributes",
        attr({"stringValue": "\ud800"}),
        "{field}[0].value.stringValue: not valid UTF-8 (a lone surrogate)",
    ),
    "boolean of a wrong type": (
        "attributes",
        "attributes",
        attr({"boolValue": "yes"}),
        "{field}[0].value.boolValue: expected a boolean, got 'yes'",
    ),
    "bad base64": (
        "attributes",
        "attributes",
        attr({"bytesValue": "not base64!"}),
        "{field}[0].value.bytesValue: invalid base64",
    ),
    "attributes not an array": (
        "attributes",
        "attributes",
        {"k": "v"},
        "{field}: expected an array, got dict",
    ),
    "attribute without a key": (
        "attributes",
        "attributes",
        [{"value": {"stringValue": "v"}}],
        "{field}[0].key: missing or not a string",
    ),
    "AnyValue not an object": (
        "attributes",
        "attributes",
        attr("v"),
        "{field}[0].value: expected an AnyValue object, got str",
    ),
}
