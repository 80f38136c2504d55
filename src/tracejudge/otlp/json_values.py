"""The OTLP/JSON rules, written once for every signal (traces, logs).

Both signals share the document's shape, walked once by ``fill_request``: a list of
resource entries (``resourceSpans``/``resourceLogs``), each a resource, a schema URL and
a list of scope entries, each a scope, a schema URL and the signal's items (``spans``,
``logRecords``), which the signal's own setter fills.

The OTLP/JSON encoding (specification.md, "JSON Protobuf Encoding") is protobuf's JSON
mapping with a few differences, and these helpers are the only place tracejudge spells
them out:

- ``traceId``/``spanId`` are hex (case-insensitive), not base64; ``""`` means absent;
- 64-bit integers come as decimal strings or numbers; every integer field is checked
  against the range of its protobuf type (a value out of range is refused, never wrapped);
- enums come as integers, or as their names (the proto3 mapping allows both);
- keys are lowerCamelCase, the original snake_case names accepted too; unknown fields
  are ignored;
- ``AnyValue`` / ``KeyValue`` lists, ``Resource`` and ``InstrumentationScope`` are filled
  into protobuf messages, refusing values nested deeper than protobuf decoders accept.

Anything malformed raises ``OtlpDecodeError`` naming the exact field relative to the
message being filled (``attributes[2].value.intValue: ...``); the signal walkers prefix
the path of that message on the way out, so paths are only formatted when something is
wrong. ``google.protobuf.json_format.Parse`` manages only a few thousand spans a second,
which is why the walkers fill messages from ``json.loads`` output directly.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from tracejudge.model.errors import OtlpDecodeError

__all__ = [
    "MAX_MESSAGE_DEPTH",
    "RESOURCE_VALUE_DEPTH",
    "SCOPE_VALUE_DEPTH",
    "TOO_DEEP",
    "Shape",
    "as_list",
    "as_object",
    "enum",
    "fill_request",
    "get",
    "id_bytes",
    "parse_json_document",
    "prefixed",
    "set_any",
    "set_attrs",
    "set_resource",
    "set_scope",
    "string",
    "uint32",
    "uint64",
    "with_path",
]

TOO_DEEP = "values nested too deeply"
MAX_MESSAGE_DEPTH = 100
"""The deepest protobuf message nesting a decoder accepts: upb's (and C++/Java protobuf's)
default recursion limit, counting the export request as level 1. A request built deeper
would serialize fine and then fail every parse of it (the collector's decision, a
backend), so such values are refused up front."""
_TOO_DEEP_PROTO = (
    f"{TOO_DEEP} (protobuf decoders refuse messages nested deeper than {MAX_MESSAGE_DEPTH} levels)"
)
RESOURCE_VALUE_DEPTH = 5
"""Message depth of the first ``AnyValue`` of a resource attribute, counting the request
as 1: request > Resource{Spans,Logs} > Resource > KeyValue > AnyValue."""
SCOPE_VALUE_DEPTH = 6
"""... of a scope attribute: request > Resource* > Scope* > InstrumentationScope > KeyValue >
AnyValue."""

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
_UINT32_MAX = 2**32 - 1
_UINT64_MAX = 2**64 - 1
_SHOWN = 80
"""Longest ``repr`` of a bad value quoted in an error (a reason names the field, it does
not echo a megabyte back)."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


# --- structure ------------------------------------------------------------------------


def get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    """The field ``camel`` of a JSON object, or its original snake_case name."""
    value = obj.get(camel)
    if value is None:
        value = obj.get(snake)
    return value


def prefixed(exc: OtlpDecodeError, prefix: str) -> OtlpDecodeError:
    """``exc`` with ``prefix`` (the path of the message it was raised in) before its path."""
    return OtlpDecodeError(f"{prefix}.{exc.path}" if exc.path else prefix, exc.reason)


def with_path(exc: ValueError, prefix: str) -> OtlpDecodeError:
    """Any conversion failure as an ``OtlpDecodeError`` under ``prefix``: an
    ``OtlpDecodeError`` keeps its own path; anything else protobuf raised (a rule this
    module missed) is reported at ``prefix``, never as a bare ``ValueError``."""
    if isinstance(exc, OtlpDecodeError):
        return prefixed(exc, prefix)
    return OtlpDecodeError(prefix, str(exc))


def as_object(value: Any, path: str) -> dict[str, Any]:
    """A JSON object; missing (or null) is ``{}``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise OtlpDecodeError(path, f"expected an object, got {type(value).__name__}")
    return value


def as_list(value: Any, path: str) -> list[Any]:
    """A JSON array; missing (or null) is ``[]``."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise OtlpDecodeError(path, f"expected an array, got {type(value).__name__}")
    return value


def parse_json_document(data: str | bytes | bytearray) -> Any:
    """Parse JSON text with the decoder's error type (an OTLP/JSON body that is not JSON).

    ``orjson`` first (about 2-3x ``json.loads``, which otherwise bounds the OTLP/JSON
    path); what it refuses (integers beyond 64 bits, nesting past its limit, lone
    surrogates) goes to the stdlib, so accepted documents and error behaviour stay those of
    ``json.loads``.
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
        raise OtlpDecodeError("", TOO_DEEP) from None


# --- scalars --------------------------------------------------------------------------


def string(value: Any, path: str) -> str:
    """A string protobuf can encode (UTF-8: a lone surrogate, which ``json.loads`` lets
    through from a ``\\ud800`` escape, is refused here with its path)."""
    if not isinstance(value, str):
        raise OtlpDecodeError(path, f"expected a string, got {type(value).__name__}")
    if not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:
            raise OtlpDecodeError(path, "not valid UTF-8 (a lone surrogate)") from None
    return value


def _integer(value: Any, path: str, low: int, high: int) -> int:
    """An integer field: a number or a decimal string, within ``[low, high]``.

    Values outside the field's range are refused: protobuf cannot hold them, and a JSON
    parser may have rounded such a literal to a float on the way in.
    """
    if type(value) is int:
        result = value
    elif isinstance(value, str):
        try:
            result = int(value)
        except ValueError:
            raise OtlpDecodeError(path, f"not an integer: {_shown(value)}") from None
    elif isinstance(value, float) and value.is_integer():
        result = int(value)
    else:
        raise OtlpDecodeError(path, f"not an integer: {_shown(value)}")
    if not low <= result <= high:
        bits = "64-bit" if high >= _INT64_MAX else "32-bit"
        raise OtlpDecodeError(path, f"integer out of the {bits} range: {_shown(value)}")
    return result


def uint64(value: Any, path: str) -> int:
    """A ``fixed64``/``uint64`` field (times); missing is 0."""
    if value is None:
        return 0
    if type(value) is int and 0 <= value <= _UINT64_MAX:
        return value
    return _integer(value, path, 0, _UINT64_MAX)


def uint32(value: Any, path: str) -> int:
    """A ``fixed32``/``uint32`` field (flags, dropped counts); missing is 0."""
    if value is None:
        return 0
    return _integer(value, path, 0, _UINT32_MAX)


def _int64(value: Any, path: str) -> int:
    if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:
        return value
    return _integer(value, path, _INT64_MIN, _INT64_MAX)


def enum(value: Any, names: dict[str, int], path: str) -> int:
    """An enum field: its number, or its name (``names``); missing is 0. Numbers unknown to
    ``names`` are kept (proto3 enums are open), within the int32 range enums have."""
    if value is None:
        return 0
    if type(value) is int:
        number = value
    elif isinstance(value, str):
        known = names.get(value)
        if known is not None:
            return known
        try:
            number = int(value)
        except ValueError:
            raise OtlpDecodeError(path, f"unknown enum value {_shown(value)}") from None
    else:
        raise OtlpDecodeError(path, f"not an enum value: {_shown(value)}")
    if not _INT32_MIN <= number <= _INT32_MAX:
        raise OtlpDecodeError(path, f"enum value out of the 32-bit range: {_shown(value)}")
    return number


def id_bytes(value: Any, chars: int, path: str, *, required: bool) -> bytes:
    """A hex id of ``chars`` hex digits (any case) as bytes; ``""`` or missing is ``b""``,
    or an error when ``required``."""
    if value is None or value == "":
        if required:
            raise OtlpDecodeError(path, "missing")
        return b""
    if not isinstance(value, str) or len(value) != chars:
        raise OtlpDecodeError(path, f"not {chars} hex chars")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise OtlpDecodeError(path, f"not {chars} hex chars") from None
    if len(raw) * 2 != chars:  # fromhex skips whitespace
        raise OtlpDecodeError(path, f"not {chars} hex chars")
    return raw


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise OtlpDecodeError(path, f"expected a boolean, got {_shown(value)}")
    return value


_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _double(value: Any, path: str) -> float:
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
    raise OtlpDecodeError(path, f"expected a number, got {_shown(value)}")


def _bytes(value: Any, path: str) -> bytes:
    """Base64, standard or URL-safe, padding optional (as the proto3 JSON mapping)."""
    if not isinstance(value, str):
        raise OtlpDecodeError(path, "expected a base64 string")
    try:
        if "-" in value or "_" in value:
            return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise OtlpDecodeError(path, "invalid base64") from None


# --- AnyValue and attributes ----------------------------------------------------------


def _set_string(target: AnyValue, value: Any, path: str, depth: int) -> None:
    target.string_value = string(value, path)


def _set_int(target: AnyValue, value: Any, path: str, depth: int) -> None:
    target.int_value = _int64(value, path)


def _set_bool(target: AnyValue, value: Any, path: str, depth: int) -> None:
    target.bool_value = _bool(value, path)


def _set_double(target: AnyValue, value: Any, path: str, depth: int) -> None:
    target.double_value = _double(value, path)


def _set_bytes(target: AnyValue, value: Any, path: str, depth: int) -> None:
    target.bytes_value = _bytes(value, path)


def _set_array(target: AnyValue, value: Any, path: str, depth: int) -> None:
    if depth + 1 > MAX_MESSAGE_DEPTH:  # the ArrayValue itself
        raise OtlpDecodeError(path, _TOO_DEEP_PROTO)
    array = target.array_value
    values = as_list(as_object(value, path).get("values"), path + ".values")
    for i, v in enumerate(values):
        set_any(array.values.add(), v, f"{path}.values[{i}]", depth + 2)
    if not values:
        array.SetInParent()


def _set_kvlist(target: AnyValue, value: Any, path: str, depth: int) -> None:
    if depth + 1 > MAX_MESSAGE_DEPTH:  # the KeyValueList itself
        raise OtlpDecodeError(path, _TOO_DEEP_PROTO)
    kvlist = target.kvlist_value
    set_attrs(kvlist.values, as_object(value, path).get("values"), path + ".values", depth + 3)
    kvlist.SetInParent()


_Setter = Callable[[AnyValue, Any, str, int], None]
_ANY: dict[str, tuple[str, _Setter]] = {}
for _camel, _snake, _setter in (
    ("stringValue", "string_value", _set_string),
    ("intValue", "int_value", _set_int),
    ("boolValue", "bool_value", _set_bool),
    ("doubleValue", "double_value", _set_double),
    ("arrayValue", "array_value", _set_array),
    ("kvlistValue", "kvlist_value", _set_kvlist),
    ("bytesValue", "bytes_value", _set_bytes),
):
    _ANY[_camel] = (_camel, _setter)
    _ANY[_snake] = (_camel, _setter)


def set_any(target: AnyValue, value: Any, path: str, depth: int) -> None:
    """Fill ``target`` (an ``AnyValue`` at message depth ``depth``) from its JSON form.
    ``{}`` (no field set) is OTLP's null: ``target`` is present and empty, as protobuf's
    JSON mapping has it. The first field set is the value."""
    if depth > MAX_MESSAGE_DEPTH:
        raise OtlpDecodeError(path, _TOO_DEEP_PROTO)
    if not isinstance(value, dict):
        raise OtlpDecodeError(path, f"expected an AnyValue object, got {type(value).__name__}")
    for key, inner in value.items():
        entry = _ANY.get(key)
        if entry is not None and inner is not None:
            entry[1](target, inner, f"{path}.{entry[0]}", depth)
            return
    target.SetInParent()


def set_attrs(target: Any, items: Any, path: str, depth: int) -> None:
    """Fill a repeated ``KeyValue`` field whose values sit at message depth ``depth``."""
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
        out.key = key if key.isascii() else string(key, f"{path}[{i}].key")
        value = kv.get("value")
        if value is not None:
            # Fast path: a single ASCII string value (the common case).
            s = value.get("stringValue") if isinstance(value, dict) else None
            if isinstance(s, str) and s.isascii():
                out.value.string_value = s
            else:
                set_any(out.value, value, f"{path}[{i}].value", depth)


# --- what every signal shares ---------------------------------------------------------


def set_resource(target: Resource, value: Any, path: str) -> None:
    """Fill a ``Resource`` (``path`` names it: ``resource``)."""
    resource = as_object(value, path)
    set_attrs(
        target.attributes, resource.get("attributes"), path + ".attributes", RESOURCE_VALUE_DEPTH
    )
    dropped = get(resource, "droppedAttributesCount", "dropped_attributes_count")
    if dropped:
        target.dropped_attributes_count = uint32(dropped, path + ".droppedAttributesCount")


def set_scope(target: InstrumentationScope, value: Any, path: str) -> None:
    """Fill an ``InstrumentationScope`` (``path`` names it: ``scope``)."""
    scope = as_object(value, path)
    target.name = string(scope.get("name", ""), path + ".name")
    target.version = string(scope.get("version", ""), path + ".version")
    set_attrs(target.attributes, scope.get("attributes"), path + ".attributes", SCOPE_VALUE_DEPTH)
    dropped = get(scope, "droppedAttributesCount", "dropped_attributes_count")
    if dropped:
        target.dropped_attributes_count = uint32(dropped, path + ".droppedAttributesCount")


@dataclass(frozen=True, slots=True)
class Shape:
    """A signal's three levels as (JSON name, protobuf field name, which the JSON also
    accepts): resource entries, scope entries, items."""

    resources: tuple[str, str]
    scopes: tuple[str, str]
    items: tuple[str, str]


def fill_request(
    request: Any,
    obj: dict[str, Any],
    shape: Shape,
    set_item: Callable[[Any, Any], None],
    rejects: list[str] | None,
) -> None:
    """Fill ``request`` (an ``Export*ServiceRequest``) from the OTLP/JSON document ``obj``:
    every resource and scope, and each item by ``set_item(message, json_item)``. A
    malformed item is left out and reported in ``rejects`` with its full path (OTLP
    partial success), or raised when ``rejects`` is None; a malformed resource or scope
    entry raises, its path prefixed."""
    r_json, r_field = shape.resources
    s_json, s_field = shape.scopes
    i_json, i_field = shape.items
    for ri, entry in enumerate(as_list(get(obj, r_json, r_field), r_json)):
        try:
            entry = as_object(entry, "")
            resource = getattr(request, r_field).add()
            set_resource(resource.resource, entry.get("resource"), "resource")
            _set_schema_url(resource, entry)
            for si, scope_entry in enumerate(as_list(get(entry, s_json, s_field), s_json)):
                try:
                    scope_entry = as_object(scope_entry, "")
                    scope = getattr(resource, s_field).add()
                    set_scope(scope.scope, scope_entry.get("scope"), "scope")
                    _set_schema_url(scope, scope_entry)
                    items = getattr(scope, i_field)
                    for i, item in enumerate(as_list(get(scope_entry, i_json, i_field), i_json)):
                        try:
                            set_item(items.add(), item)
                        except ValueError as exc:  # OtlpDecodeError, or a rule missed
                            error = with_path(exc, f"{i_json}[{i}]")
                            if rejects is None:
                                raise error from None
                            del items[-1]
                            rejects.append(str(prefixed(error, f"{r_json}[{ri}].{s_json}[{si}]")))
                except OtlpDecodeError as exc:
                    raise prefixed(exc, f"{s_json}[{si}]") from None
        except OtlpDecodeError as exc:
            raise prefixed(exc, f"{r_json}[{ri}]") from None


def _set_schema_url(message: Any, entry: dict[str, Any]) -> None:
    schema_url = get(entry, "schemaUrl", "schema_url")
    if schema_url:
        message.schema_url = string(schema_url, "schemaUrl")
