"""OTLP/JSON -> ``SpanRecord``, and OTLP/JSON -> protobuf, straight from ``json.loads`` output.

``google.protobuf.json_format.Parse`` manages only a few thousand spans a second; the
collector receives OTLP/JSON at line rate, so both paths here walk the parsed JSON
directly. They follow the OTLP/JSON rules (specification.md, "JSON Protobuf Encoding"):
hex ``traceId``/``spanId`` (case-insensitive), int64 as decimal strings or numbers, enums as
integers (names accepted too, as the proto3 mapping allows), lowerCamelCase keys (the
original snake_case names accepted too) and unknown fields ignored. Anything malformed
raises ``OtlpDecodeError`` naming the exact field, e.g.
``resourceSpans[0].scopeSpans[1].spans[3].traceId: not 32 hex chars``.

Paths are only formatted when something is wrong: the hot loop carries indices, and a
failing inner call's relative path is prefixed on the way out.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tracejudge.model.errors import OtlpDecodeError
from tracejudge.model.spans import EventRecord, SpanRecord

__all__ = ["PartialRequest", "json_to_proto", "json_to_proto_partial", "parse_json_document"]
__all__ += ["spans_from_json"]

_SPAN_KINDS = {name: int(num) for name, num in Span.SpanKind.items()}
_TOO_DEEP = "values nested too deeply"
MAX_MESSAGE_DEPTH = 100
"""The deepest protobuf message nesting a decoder accepts: upb's (and C++/Java protobuf's)
default recursion limit, counting the ``ExportTraceServiceRequest`` as level 1. A request
the converter built deeper would serialize fine and then fail every parse of it (the
collector's decision, a backend), so ``json_to_proto`` refuses such values up front."""
_TOO_DEEP_PROTO = (
    f"values nested too deeply (protobuf decoders refuse messages nested deeper than "
    f"{MAX_MESSAGE_DEPTH} levels)"
)
# Message depth of the first ``AnyValue`` under each kind of attribute list, counting the
# request as 1: request > ResourceSpans > Resource > KeyValue > AnyValue, and so on.
_RESOURCE_VALUE_DEPTH = 5
_SCOPE_VALUE_DEPTH = 6
_SPAN_VALUE_DEPTH = 6
_EVENT_VALUE_DEPTH = 7
_STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


def _get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    if value is None:
        value = obj.get(snake)
    return value


def _prefix(exc: OtlpDecodeError, prefix: str) -> OtlpDecodeError:
    return OtlpDecodeError(f"{prefix}.{exc.path}" if exc.path else prefix, exc.reason)


def _obj(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise OtlpDecodeError(path, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise OtlpDecodeError(path, f"expected an array, got {type(value).__name__}")
    return value


def _hex_id(value: Any, chars: int, path: str) -> str | None:
    """Validate a hex id; '' or missing -> None. Returns canonical lowercase hex."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) != chars:
        raise OtlpDecodeError(path, f"not {chars} hex chars")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise OtlpDecodeError(path, f"not {chars} hex chars") from None
    if len(raw) * 2 != chars:  # fromhex skips whitespace
        raise OtlpDecodeError(path, f"not {chars} hex chars")
    return raw.hex()


_INT64_MIN = -(2**63)
_UINT64_MAX = 2**64 - 1


def _uint(value: Any, path: str) -> int:
    """An (u)int64 field: a number or a decimal string; missing -> 0.

    Values outside the 64-bit range are refused: no OTLP field can hold them, and a JSON
    parser may have rounded such a literal to a float on the way in.
    """
    if value is None:
        return 0
    if type(value) is int:
        result = value
    elif isinstance(value, str):
        try:
            result = int(value)
        except ValueError:
            raise OtlpDecodeError(path, f"not an integer: {value!r}") from None
    elif isinstance(value, float) and value.is_integer():
        result = int(value)
    else:
        raise OtlpDecodeError(path, f"not an integer: {value!r}")
    if not _INT64_MIN <= result <= _UINT64_MAX:
        raise OtlpDecodeError(path, f"integer out of the 64-bit range: {value!r}")
    return result


def _enum(value: Any, names: dict[str, int], path: str) -> int:
    if value is None:
        return 0
    if type(value) is int:
        return value
    if isinstance(value, str):
        if value in names:
            return names[value]
        try:
            return int(value)
        except ValueError:
            raise OtlpDecodeError(path, f"unknown enum value {value!r}") from None
    raise OtlpDecodeError(path, f"not an enum value: {value!r}")


# --- AnyValue -> Python ---------------------------------------------------------------


def _v_string(value: Any, path: str) -> Any:
    if not isinstance(value, str):
        raise OtlpDecodeError(path, f"expected a string, got {type(value).__name__}")
    return value


def _v_int(value: Any, path: str) -> Any:
    if type(value) is int and _INT64_MIN <= value < 2**63:
        return value
    result = _uint(value, path)
    if result >= 2**63:
        raise OtlpDecodeError(path, f"intValue out of the int64 range: {value!r}")
    return result


def _v_bool(value: Any, path: str) -> Any:
    if not isinstance(value, bool):
        raise OtlpDecodeError(path, f"expected a boolean, got {value!r}")
    return value


_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _v_double(value: Any, path: str) -> Any:
    if isinstance(value, float):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        special = _SPECIAL_FLOATS.get(value)
        if special is not None:
            return special
        try:
            return float(value)
        except ValueError:
            pass
    raise OtlpDecodeError(path, f"expected a number, got {value!r}")


def _v_array(value: Any, path: str) -> Any:
    values = _list(_obj(value, path).get("values"), path + ".values")
    return [_any(v, f"{path}.values[{i}]") for i, v in enumerate(values)]


def _v_kvlist(value: Any, path: str) -> Any:
    return _attrs(_obj(value, path).get("values"), path + ".values")


def _v_bytes(value: Any, path: str) -> Any:
    if not isinstance(value, str):
        raise OtlpDecodeError(path, "expected a base64 string")
    try:
        if "-" in value or "_" in value:
            return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise OtlpDecodeError(path, "invalid base64") from None


_ANY: dict[str, tuple[str, Callable[[Any, str], Any]]] = {}
for _camel, _snake, _fn in (
    ("stringValue", "string_value", _v_string),
    ("intValue", "int_value", _v_int),
    ("boolValue", "bool_value", _v_bool),
    ("doubleValue", "double_value", _v_double),
    ("arrayValue", "array_value", _v_array),
    ("kvlistValue", "kvlist_value", _v_kvlist),
    ("bytesValue", "bytes_value", _v_bytes),
):
    _ANY[_camel] = (_camel, _fn)
    _ANY[_snake] = (_camel, _fn)


def _any(value: Any, path: str) -> Any:
    """An ``AnyValue`` object -> Python. ``{}`` (no field set) is OTLP's null -> None."""
    if not isinstance(value, dict):
        raise OtlpDecodeError(path, f"expected an AnyValue object, got {type(value).__name__}")
    for key, inner in value.items():
        entry = _ANY.get(key)
        if entry is not None and inner is not None:
            return entry[1](inner, f"{path}.{entry[0]}")
    return None


def _attrs(items: Any, path: str) -> dict[str, Any]:
    """A list of ``KeyValue`` -> dict (a repeated key keeps its last value)."""
    out: dict[str, Any] = {}
    if items is None:
        return out
    if not isinstance(items, list):
        raise OtlpDecodeError(path, f"expected an array, got {type(items).__name__}")
    for i, kv in enumerate(items):
        if not isinstance(kv, dict):
            raise OtlpDecodeError(f"{path}[{i}]", "expected a KeyValue object")
        key = kv.get("key")
        if not isinstance(key, str):
            raise OtlpDecodeError(f"{path}[{i}].key", "missing or not a string")
        value = kv.get("value")
        if value is None:
            out[key] = None
            continue
        # Fast path: a single string value (the common case).
        s = value.get("stringValue") if isinstance(value, dict) else None
        if isinstance(s, str):
            out[key] = s
        else:
            out[key] = _any(value, f"{path}[{i}].value")
    return out


# --- JSON -> SpanRecord ---------------------------------------------------------------


def parse_json_document(data: str | bytes | bytearray) -> Any:
    """Parse JSON text with the decoder's error type (an OTLP/JSON body that is not JSON).

    ``orjson`` first (about 2-3x ``json.loads``, which otherwise bounds the OTLP/JSON
    path); what it refuses (integers beyond 64 bits, nesting past its limit) goes to the
    stdlib, so accepted documents and error behaviour stay those of ``json.loads``.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise OtlpDecodeError("", f"invalid JSON: {exc}") from None
    except RecursionError:
        raise OtlpDecodeError("", _TOO_DEEP) from None


def _span_record(span: Any, resource: dict[str, Any], scope: str) -> SpanRecord:
    if not isinstance(span, dict):
        raise OtlpDecodeError("", "expected a Span object")
    trace_id = _hex_id(_get(span, "traceId", "trace_id"), 32, "traceId")
    if trace_id is None:
        raise OtlpDecodeError("traceId", "missing")
    span_id = _hex_id(_get(span, "spanId", "span_id"), 16, "spanId")
    if span_id is None:
        raise OtlpDecodeError("spanId", "missing")
    parent = _hex_id(_get(span, "parentSpanId", "parent_span_id"), 16, "parentSpanId")
    name = span.get("name", "")
    if not isinstance(name, str):
        raise OtlpDecodeError("name", "not a string")
    attributes = span.get("attributes")
    events: list[EventRecord] = []
    raw_events = span.get("events")
    if raw_events:
        for i, ev in enumerate(_list(raw_events, "events")):
            try:
                ev = _obj(ev, "")
                events.append(
                    EventRecord(
                        name=_v_string(ev.get("name", ""), "name"),
                        time_ns=_uint(_get(ev, "timeUnixNano", "time_unix_nano"), "timeUnixNano"),
                        attributes=_attrs(ev.get("attributes"), "attributes"),
                    )
                )
            except OtlpDecodeError as exc:
                raise _prefix(exc, f"events[{i}]") from None
    status = span.get("status")
    code = 0
    message = ""
    if status:
        status = _obj(status, "status")
        code = _enum(status.get("code"), _STATUS_CODES, "status.code")
        message = status.get("message") or ""
        if not isinstance(message, str):
            raise OtlpDecodeError("status.message", "not a string")
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=_enum(span.get("kind"), _SPAN_KINDS, "kind"),
        start_ns=_uint(
            _get(span, "startTimeUnixNano", "start_time_unix_nano"), "startTimeUnixNano"
        ),
        end_ns=_uint(_get(span, "endTimeUnixNano", "end_time_unix_nano"), "endTimeUnixNano"),
        status_code=code,
        status_message=message,
        attributes=_attrs(attributes, "attributes") if attributes else {},
        events=events,
        resource=resource,
        scope=scope,
    )


def _scope_name(scope_obj: Any) -> str:
    scope = _obj(scope_obj, "scope")
    name = scope.get("name", "")
    if not isinstance(name, str):
        raise OtlpDecodeError("scope.name", "not a string")
    return name


def _resource_spans(obj: Any) -> list[Any]:
    if isinstance(obj, str | bytes | bytearray):
        obj = parse_json_document(obj)
    if not isinstance(obj, dict):
        raise OtlpDecodeError("", f"expected an OTLP/JSON object, got {type(obj).__name__}")
    return _list(_get(obj, "resourceSpans", "resource_spans"), "resourceSpans")


def spans_from_json(obj: Any) -> list[SpanRecord]:
    """Decode an OTLP/JSON ``ExportTraceServiceRequest`` (or ``TracesData``).

    ``obj`` is the ``json.loads`` result, or the JSON text itself. Raises
    ``OtlpDecodeError`` for anything malformed.
    """
    try:
        return _spans_from_json(obj)
    except RecursionError:
        raise OtlpDecodeError("", _TOO_DEEP) from None


def _spans_from_json(obj: Any) -> list[SpanRecord]:
    out: list[SpanRecord] = []
    append = out.append
    for ri, rs in enumerate(_resource_spans(obj)):
        try:
            rs = _obj(rs, "")
            resource = _attrs(
                _obj(rs.get("resource"), "resource").get("attributes"), "resource.attributes"
            )
            scope_spans = _list(_get(rs, "scopeSpans", "scope_spans"), "scopeSpans")
            for si, ss in enumerate(scope_spans):
                try:
                    ss = _obj(ss, "")
                    scope = _scope_name(ss.get("scope"))
                    spans = _list(ss.get("spans"), "spans")
                    for i, span in enumerate(spans):
                        try:
                            append(_span_record(span, resource, scope))
                        except OtlpDecodeError as exc:
                            raise _prefix(exc, f"spans[{i}]") from None
                except OtlpDecodeError as exc:
                    raise _prefix(exc, f"scopeSpans[{si}]") from None
        except OtlpDecodeError as exc:
            raise _prefix(exc, f"resourceSpans[{ri}]") from None
    return out


# --- JSON -> protobuf -----------------------------------------------------------------


def _set_any(target: AnyValue, value: Any, path: str, depth: int) -> None:
    """Fill ``target`` (an ``AnyValue`` at message depth ``depth``) from its JSON form."""
    if depth > MAX_MESSAGE_DEPTH:
        raise OtlpDecodeError(path, _TOO_DEEP_PROTO)
    if not isinstance(value, dict):
        raise OtlpDecodeError(path, f"expected an AnyValue object, got {type(value).__name__}")
    for key, inner in value.items():
        entry = _ANY.get(key)
        if entry is None or inner is None:
            continue
        camel = entry[0]
        sub = f"{path}.{camel}"
        if camel == "stringValue":
            target.string_value = _v_string(inner, sub)
        elif camel == "intValue":
            target.int_value = _v_int(inner, sub)
        elif camel == "boolValue":
            target.bool_value = _v_bool(inner, sub)
        elif camel == "doubleValue":
            target.double_value = _v_double(inner, sub)
        elif camel == "bytesValue":
            target.bytes_value = _v_bytes(inner, sub)
        elif camel == "arrayValue":
            if depth + 1 > MAX_MESSAGE_DEPTH:  # the ArrayValue itself
                raise OtlpDecodeError(sub, _TOO_DEEP_PROTO)
            array = target.array_value
            values = _list(_obj(inner, sub).get("values"), sub + ".values")
            for i, v in enumerate(values):
                _set_any(array.values.add(), v, f"{sub}.values[{i}]", depth + 2)
            if not values:
                target.array_value.SetInParent()
        else:  # kvlistValue
            if depth + 1 > MAX_MESSAGE_DEPTH:  # the KeyValueList itself
                raise OtlpDecodeError(sub, _TOO_DEEP_PROTO)
            kvlist = target.kvlist_value
            _set_attrs(kvlist.values, _obj(inner, sub).get("values"), sub + ".values", depth + 3)
            kvlist.SetInParent()
        return


def _set_attrs(target: Any, items: Any, path: str, depth: int) -> None:
    """Fill repeated ``KeyValue`` whose values sit at message depth ``depth``."""
    if items is None:
        return
    if not isinstance(items, list):
        raise OtlpDecodeError(path, f"expected an array, got {type(items).__name__}")
    if depth > MAX_MESSAGE_DEPTH and items:
        raise OtlpDecodeError(path, _TOO_DEEP_PROTO)
    for i, kv in enumerate(items):
        if not isinstance(kv, dict):
            raise OtlpDecodeError(f"{path}[{i}]", "expected a KeyValue object")
        key = kv.get("key")
        if not isinstance(key, str):
            raise OtlpDecodeError(f"{path}[{i}].key", "missing or not a string")
        out = target.add()
        out.key = key
        value = kv.get("value")
        if value is not None:
            s = value.get("stringValue") if isinstance(value, dict) else None
            if isinstance(s, str):
                out.value.string_value = s
            else:
                _set_any(out.value, value, f"{path}[{i}].value", depth)


def _id_bytes(value: Any, chars: int, path: str, *, required: bool) -> bytes:
    hexed = _hex_id(value, chars, path)
    if hexed is None:
        if required:
            raise OtlpDecodeError(path, "missing")
        return b""
    return bytes.fromhex(hexed)


def _set_span(out: Span, span: Any) -> None:
    if not isinstance(span, dict):
        raise OtlpDecodeError("", "expected a Span object")
    out.trace_id = _id_bytes(_get(span, "traceId", "trace_id"), 32, "traceId", required=True)
    out.span_id = _id_bytes(_get(span, "spanId", "span_id"), 16, "spanId", required=True)
    parent = _id_bytes(
        _get(span, "parentSpanId", "parent_span_id"), 16, "parentSpanId", required=False
    )
    if parent:
        out.parent_span_id = parent
    trace_state = _get(span, "traceState", "trace_state")
    if trace_state:
        out.trace_state = _v_string(trace_state, "traceState")
    flags = span.get("flags")
    if flags is not None:
        out.flags = _uint(flags, "flags")
    name = span.get("name", "")
    out.name = _v_string(name, "name")
    out.kind = _enum(span.get("kind"), _SPAN_KINDS, "kind")  # type: ignore[assignment]
    out.start_time_unix_nano = _uint(
        _get(span, "startTimeUnixNano", "start_time_unix_nano"), "startTimeUnixNano"
    )
    out.end_time_unix_nano = _uint(
        _get(span, "endTimeUnixNano", "end_time_unix_nano"), "endTimeUnixNano"
    )
    _set_attrs(out.attributes, span.get("attributes"), "attributes", _SPAN_VALUE_DEPTH)
    dropped = _get(span, "droppedAttributesCount", "dropped_attributes_count")
    if dropped:
        out.dropped_attributes_count = _uint(dropped, "droppedAttributesCount")
    for i, ev in enumerate(_list(span.get("events"), "events")):
        ev = _obj(ev, f"events[{i}]")
        pe = out.events.add()
        pe.time_unix_nano = _uint(
            _get(ev, "timeUnixNano", "time_unix_nano"), f"events[{i}].timeUnixNano"
        )
        pe.name = _v_string(ev.get("name", ""), f"events[{i}].name")
        _set_attrs(
            pe.attributes, ev.get("attributes"), f"events[{i}].attributes", _EVENT_VALUE_DEPTH
        )
        dropped = _get(ev, "droppedAttributesCount", "dropped_attributes_count")
        if dropped:
            pe.dropped_attributes_count = _uint(dropped, f"events[{i}].droppedAttributesCount")
    dropped = _get(span, "droppedEventsCount", "dropped_events_count")
    if dropped:
        out.dropped_events_count = _uint(dropped, "droppedEventsCount")
    for i, link in enumerate(_list(span.get("links"), "links")):
        link = _obj(link, f"links[{i}]")
        pl = out.links.add()
        pl.trace_id = _id_bytes(
            _get(link, "traceId", "trace_id"), 32, f"links[{i}].traceId", required=True
        )
        pl.span_id = _id_bytes(
            _get(link, "spanId", "span_id"), 16, f"links[{i}].spanId", required=True
        )
        link_state = _get(link, "traceState", "trace_state")
        if link_state:
            pl.trace_state = _v_string(link_state, f"links[{i}].traceState")
        _set_attrs(
            pl.attributes, link.get("attributes"), f"links[{i}].attributes", _EVENT_VALUE_DEPTH
        )
        if link.get("flags") is not None:
            pl.flags = _uint(link.get("flags"), f"links[{i}].flags")
        dropped = _get(link, "droppedAttributesCount", "dropped_attributes_count")
        if dropped:
            pl.dropped_attributes_count = _uint(dropped, f"links[{i}].droppedAttributesCount")
    dropped = _get(span, "droppedLinksCount", "dropped_links_count")
    if dropped:
        out.dropped_links_count = _uint(dropped, "droppedLinksCount")
    status = span.get("status")
    if status is not None:
        status = _obj(status, "status")
        out.status.SetInParent()
        out.status.code = _enum(status.get("code"), _STATUS_CODES, "status.code")  # type: ignore[assignment]
        message = status.get("message")
        if message:
            out.status.message = _v_string(message, "status.message")


def json_to_proto(obj: Any) -> ExportTraceServiceRequest:
    """Convert an OTLP/JSON request (parsed, or the JSON text) to ``ExportTraceServiceRequest``.

    Everything OTLP carries is kept (links, trace state, flags, dropped counts, scope
    version and attributes, schema URLs), so the collector can buffer and forward the
    protobuf without losing what the sender sent. The first malformed field raises.
    """
    try:
        return _json_to_proto(obj, None)
    except RecursionError:
        raise OtlpDecodeError("", _TOO_DEEP) from None


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
        raise OtlpDecodeError("", _TOO_DEEP) from None


def _json_to_proto(obj: Any, rejects: list[str] | None) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    for ri, rs in enumerate(_resource_spans(obj)):
        try:
            rs = _obj(rs, "")
            prs = request.resource_spans.add()
            resource = _obj(rs.get("resource"), "resource")
            _set_attrs(
                prs.resource.attributes,
                resource.get("attributes"),
                "resource.attributes",
                _RESOURCE_VALUE_DEPTH,
            )
            dropped = _get(resource, "droppedAttributesCount", "dropped_attributes_count")
            if dropped:
                prs.resource.dropped_attributes_count = _uint(
                    dropped, "resource.droppedAttributesCount"
                )
            schema_url = _get(rs, "schemaUrl", "schema_url")
            if schema_url:
                prs.schema_url = _v_string(schema_url, "schemaUrl")
            for si, ss in enumerate(_list(_get(rs, "scopeSpans", "scope_spans"), "scopeSpans")):
                try:
                    ss = _obj(ss, "")
                    pss = prs.scope_spans.add()
                    scope = _obj(ss.get("scope"), "scope")
                    pss.scope.name = _v_string(scope.get("name", ""), "scope.name")
                    pss.scope.version = _v_string(scope.get("version", ""), "scope.version")
                    _set_attrs(
                        pss.scope.attributes,
                        scope.get("attributes"),
                        "scope.attributes",
                        _SCOPE_VALUE_DEPTH,
                    )
                    schema_url = _get(ss, "schemaUrl", "schema_url")
                    if schema_url:
                        pss.schema_url = _v_string(schema_url, "schemaUrl")
                    for i, span in enumerate(_list(ss.get("spans"), "spans")):
                        try:
                            _set_span(pss.spans.add(), span)
                        except ValueError as exc:  # OtlpDecodeError, or a lone surrogate
                            if rejects is None:
                                if isinstance(exc, OtlpDecodeError):
                                    raise _prefix(exc, f"spans[{i}]") from None
                                raise
                            del pss.spans[-1]
                            rejects.append(_span_reason(exc, ri, si, i))
                except OtlpDecodeError as exc:
                    raise _prefix(exc, f"scopeSpans[{si}]") from None
        except OtlpDecodeError as exc:
            raise _prefix(exc, f"resourceSpans[{ri}]") from None
    return request


def _span_reason(exc: ValueError, ri: int, si: int, i: int) -> str:
    where = f"resourceSpans[{ri}].scopeSpans[{si}].spans[{i}]"
    if isinstance(exc, OtlpDecodeError):
        return str(OtlpDecodeError(f"{where}.{exc.path}" if exc.path else where, exc.reason))
    return f"{where}: {exc}"
