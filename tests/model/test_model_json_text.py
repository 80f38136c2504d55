"""``parse_json_text`` parses with orjson for speed but must give the stdlib's values."""

from __future__ import annotations

import json
import math

import pytest

from tracejudge.model.messages import parse_json_text

_CASES = [
    '[{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]',
    '{"order_id": 123456789012345678901234567890, "amount": 12.5}',
    '{"n": -98765432109876543210}',
    '{"big": 1e300, "small": 1.5e-320, "neg": -0.0}',
    '"\\ud800 lone surrogate"',
    '{"a": 1, "a": 2}',
    "  [1, 2]\n",
]


@pytest.mark.parametrize("text", _CASES)
def test_same_values_as_stdlib(text: str) -> None:
    """Rules compare tool arguments exactly (an order id past 64 bits must stay an int)."""
    value, ok = parse_json_text(text)
    assert ok
    expected = json.loads(text)
    assert value == expected
    assert json.dumps(value) == json.dumps(expected)


def test_stdlib_extensions_still_parse() -> None:
    """NaN/Infinity are JSON to the stdlib; orjson refusing them must not turn them to text."""
    value, ok = parse_json_text('{"x": NaN, "y": Infinity}')
    assert ok
    assert math.isnan(value["x"])
    assert value["y"] == math.inf


def test_not_json_is_kept_as_text() -> None:
    """A plain-text tool result stays text and is flagged as not JSON."""
    assert parse_json_text("refund issued") == ("refund issued", False)
    assert parse_json_text("[1, 2") == ("[1, 2", False)


def test_otlp_json_documents_parse_like_the_stdlib() -> None:
    """The document parser takes orjson's fast path; in-range values come out exactly as
    json.loads gives them, and non-JSON is a decode error."""
    from tracejudge.model.errors import OtlpDecodeError
    from tracejudge.otlp.json_values import parse_json_document

    for text in ['{"a": 1, "t": "1544712660000000000"}', '[1.5, "x", null, 9223372036854775807]']:
        assert parse_json_document(text) == json.loads(text)
        assert parse_json_document(text.encode()) == json.loads(text)
    with pytest.raises(OtlpDecodeError, match="invalid JSON"):
        parse_json_document(b"{not json")


@pytest.mark.parametrize("literal", ["123456789012345678901234567890", '"9223372036854775808"'])
def test_int_values_beyond_int64_are_refused(literal: str) -> None:
    """An intValue no OTLP field can hold is a clear decode error, not a silently rounded
    number (a fast JSON parser turns such literals into floats on the way in)."""
    from tracejudge.model.errors import OtlpDecodeError
    from tracejudge.otlp.records import spans_from_json

    doc = (
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c",'
        '"spanId":"eee19b7ec3c1b174","name":"x","startTimeUnixNano":"1544712660000000000",'
        '"endTimeUnixNano":"1544712661000000000","attributes":[{"key":"k","value":{"intValue":'
        + literal
        + "}}]}]}]}]}"
    )
    with pytest.raises(OtlpDecodeError, match="range"):
        spans_from_json(doc)
