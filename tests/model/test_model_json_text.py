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
