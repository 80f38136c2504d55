"""The JMESPath closure compiler must agree with the jmespath interpreter it replaces."""

from __future__ import annotations

from typing import Any

import jmespath
import pytest

from tracejudge.engine.jpath import compile_ast

DOC: dict[str, Any] = {
    "orders": [
        {"id": "A", "amount": 40, "is_duplicate": False, "tags": ["x", "y"], "refunded": True},
        {"id": "B", "amount": 12.5, "is_duplicate": True, "tags": [], "refunded": False},
        {"id": "C", "amount": 1, "is_duplicate": 1, "tags": ["z"]},
        {"amount": None},
        "not-an-object",
    ],
    "a": {"b": [{"c": 1}, {"c": 2}]},
    "nested": [[1, 2], [3], 4],
    "empty": "",
}
EXPRESSIONS = [
    "orders[*].id",
    "orders[?is_duplicate == `true`].id",
    "orders[?is_duplicate != `true`].id",
    "orders[?amount > `10`].id",
    "orders[?amount <= `12.5`].id",
    "orders[?amount > `10` && !refunded].id",
    "orders[?refunded || is_duplicate].id",
    "orders[?id == 'B'].amount",
    "orders[].tags[]",
    "orders[*].tags[0]",
    "a.b[0].c",
    "a.b[5].c",
    "a.b[*].c",
    "a.missing.deeper",
    "nested[]",
    "empty || 'default'",
    "@",
    "orders[0].id",
    "orders.id",
]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_agrees_with_interpreter(expr: str) -> None:
    """Every compiled form returns exactly what jmespath.search returns (incl. None)."""
    compiled = jmespath.compile(expr)
    fast = compile_ast(dict(compiled.parsed))
    assert fast is not None, expr
    assert fast(DOC) == compiled.search(DOC)


def test_mixed_types_do_not_raise() -> None:
    """Tool results are untrusted: comparing a string with a number yields no match.

    (The jmespath interpreter raises TypeError there; the compiled form must not.)
    """
    compiled = jmespath.compile("orders[?amount > `10`].id")
    fast = compile_ast(dict(compiled.parsed))
    assert fast is not None
    assert fast({"orders": [{"id": "A", "amount": "n/a"}, {"id": "B", "amount": 11}]}) == ["B"]


def test_unsupported_nodes_fall_back() -> None:
    """Functions, slices and multi-selects are left to the interpreter."""
    for expr in ("length(orders)", "orders[0:2]", "orders[*].[id, amount]", "a | b"):
        assert compile_ast(dict(jmespath.compile(expr).parsed)) is None, expr
