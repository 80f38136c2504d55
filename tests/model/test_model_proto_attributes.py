"""Protobuf attribute decoding: fast paths keep every value and every error's exact path."""

from __future__ import annotations

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tracejudge.model import OtlpDecodeError
from tracejudge.model.spans import SpanRecord
from tracejudge.otlp.records import attributes_to_dict, span_from_proto


def _kv(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def test_zero_empty_and_unset_values_are_kept_with_their_types() -> None:
    """The string and integer fast paths only answer for non-empty/non-zero values; 0, ""
    and an unset AnyValue must still decode to 0, "" and None (not be dropped or confused)."""
    kvs = [
        _kv("n", AnyValue(int_value=7)),
        _kv("zero", AnyValue(int_value=0)),
        _kv("empty", AnyValue(string_value="")),
        _kv("unset", AnyValue()),
        _kv("flag", AnyValue(bool_value=False)),
        _kv("ratio", AnyValue(double_value=0.0)),
        _kv("neg", AnyValue(int_value=-3)),
    ]
    got = attributes_to_dict(kvs)
    assert got == {
        "n": 7, "zero": 0, "empty": "", "unset": None, "flag": False, "ratio": 0.0, "neg": -3
    }  # fmt: skip
    assert type(got["zero"]) is int
    assert type(got["ratio"]) is float
    assert got["flag"] is False


def test_error_path_names_the_failing_entry_after_fast_path_entries() -> None:
    """The loop no longer counts entries; a bad value must still be reported at its own
    index (here 2, after a string and an integer, and after an equal-key good entry)."""
    bad = AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1)]))
    bad.array_value.values.add().string_value_strindex = 3
    kvs = [
        _kv("s", AnyValue(string_value="x")),
        _kv("b", AnyValue(int_value=5)),
        _kv("b", bad),
    ]
    with pytest.raises(OtlpDecodeError) as info:
        attributes_to_dict(kvs, "span.attributes")
    assert str(info.value).startswith("span.attributes[2].value.arrayValue.values[1]:")
    assert "string_value_strindex" in str(info.value)


def test_decoded_span_fields_land_in_their_own_slots() -> None:
    """The decoder builds SpanRecord positionally (hot path); every field, given a distinct
    value, must come out under its own name, so a reordered dataclass cannot go unnoticed."""
    span = Span(
        trace_id=bytes(range(16)),
        span_id=bytes(range(8)),
        parent_span_id=bytes(range(8, 16)),
        name="chat m",
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=11,
        end_time_unix_nano=22,
        status=Status(code=Status.STATUS_CODE_ERROR, message="boom"),
        attributes=[_kv("k", AnyValue(string_value="v"))],
    )
    resource = {"service.name": "svc"}
    got = span_from_proto(span, resource, "scope-x")
    assert got == SpanRecord(
        trace_id=bytes(range(16)).hex(),
        span_id=bytes(range(8)).hex(),
        parent_span_id=bytes(range(8, 16)).hex(),
        name="chat m",
        kind=Span.SPAN_KIND_CLIENT,
        start_ns=11,
        end_ns=22,
        status_code=Status.STATUS_CODE_ERROR,
        status_message="boom",
        attributes={"k": "v"},
        events=[],
        resource=resource,
        scope="scope-x",
    )
