"""The CEL view is built small for speed, and building it small never changes an answer."""

from __future__ import annotations

import pytest

from tests.engine.engine_runs import model, refund_run, tool
from tracejudge.engine.celview import ViewSpec, run_view
from tracejudge.engine.compile import Compiler, cel_activation
from tracejudge.engine.context import RunContext
from tracejudge.model.run import Run


def test_member_access_only_cuts_maps_to_the_named_keys() -> None:
    """``t.args.amount`` can only ever read ``amount``: the other keys need not be converted."""
    spec = ViewSpec.of(["run.tools.all(t, double(t.args.amount) < 500.0)"])
    assert dict(spec.keys)["args"] == frozenset({"amount"})


@pytest.mark.parametrize(
    "expr",
    [
        "run.tools.exists(t, t.args['order-id'] == 'B-200')",  # an index
        "run.tools.exists(t, size(t.args) > 2)",  # a function on the map
        "run.tools.exists(t, t.args.exists(k, k == 'amount'))",  # a macro on the map
        "run.tools.exists(t, t.args == {'order_id': 'B-200'})",  # the whole map
        "run.tools.exists(t, t.name == 'args')",  # a literal with the field's name
    ],
)
def test_any_other_use_keeps_the_map_whole(expr: str) -> None:
    """Pruning errs on keeping: an index, a call, a comparison or a literal disables it."""
    assert "args" not in dict(ViewSpec.of([expr]).keys)


def _eval(expr: str, run: Run, spec: ViewSpec | None) -> object:
    c = Compiler()
    compiled = c.cel("expr", expr)
    assert compiled is not None, c.errors
    ctx = RunContext(run, {}, {}, None, spec)
    value, err = compiled.evaluate(cel_activation(run_view(run, ctx.kinds, spec)))
    return value if err is None else f"error: {err.split(':')[0]}"


EXPRESSIONS = [
    "run.tools.filter(t, t.name == 'refund_api.create').all(t, double(t.args.amount) <= 500.0)",
    "run.tools.filter(t, !t.ok).size() <= 2",
    "run.tools.exists(t, has(t.args.amount) && t.args.amount > 30.0)",
    "run.tools.exists(t, has(t.args.nope))",
    "run.tools.exists(t, t.args['order_id'] == 'B-200')",
    "run.tools.all(t, t.args.order_id == 'B-200')",  # an error on calls without it
    "run.tools.exists(t, t.result.status == 'succeeded')",
    "run.models.all(m, m.input_tokens <= 100) && run.input_tokens == 400",
    "run.tools.map(t, t.index) == [1, 3, 5, 6]",
    "run.step_count == 8 && run.tool_calls == 4 && run.model_calls == 4",
    "run.final_answer.contains('re_ABC12345') && run.case_id == 'dup-charge-1'",
    "run.tools.exists(t, t.tool_kind == null && t.kind == 'tool')",
    "run.tools.exists(t, t.args.customer_id == 'u1')",
    "run.tools[0].args.customer_id == 'u1' && run.tools[0].span_id != ''",
]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_the_pruned_view_answers_like_the_full_view(expr: str) -> None:
    """Speed must not change a verdict: same value (or same kind of error) either way."""
    run = refund_run("healthy")
    assert _eval(expr, run, ViewSpec.of(EXPRESSIONS)) == _eval(expr, run, None)
    assert _eval(expr, run, ViewSpec.of([expr])) == _eval(expr, run, None)


def test_text_arguments_are_kept_as_text() -> None:
    """Non-JSON arguments are a string in the view, pruned or not (they have no keys)."""
    run = refund_run("healthy")
    run.steps.append(tool("send_email", "hello u1", None, args_json=False))
    run.steps.append(model())
    expr = "run.tools.exists(t, !t.args_is_json && t.args == 'hello u1')"
    spec = ViewSpec.of([expr, "run.tools.all(t, t.args.amount > 0.0)"])
    assert _eval(expr, run, spec) is True


def test_state_predicate_answers_are_remembered_per_typed_value() -> None:
    """1, 1.0 and true are different CEL values: the cache must not mix them up."""
    c = Compiler()
    expr = c.cel("cel", "type(value) == int")
    assert expr is not None
    assert expr.evaluate_value(1) == (True, None)
    assert expr.evaluate_value(1.0) == (False, None)
    assert expr.evaluate_value(True) == (False, None)
    assert expr.evaluate_value(1) == (True, None)  # from the cache
    text = c.cel("cel", "value in ['succeeded', 'pending']")
    assert text is not None
    for _ in range(3):
        assert text.evaluate_value("succeeded") == (True, None)
        assert text.evaluate_value("failed") == (False, None)
    assert text.evaluate_value({"status": "x"}) == (False, None)  # maps are not cached
    bad = c.cel("cel", "value.status == 'ok'")
    assert bad is not None
    value, err = bad.evaluate_value("ok")
    assert value is None
    assert err is not None


def test_state_cache_is_bounded() -> None:
    """Unbounded distinct values (ids) must not grow memory without limit."""
    from tracejudge.engine.compile import MAX_CACHED_VALUES

    c = Compiler()
    expr = c.cel("cel", "value != ''")
    assert expr is not None
    for k in range(MAX_CACHED_VALUES * 3):
        assert expr.evaluate_value(f"id-{k}") == (True, None)
    assert len(expr._by_value) <= MAX_CACHED_VALUES
