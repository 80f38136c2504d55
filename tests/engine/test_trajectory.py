"""Trajectory checks: order, entity binding, presence, references, duplicates, loops, recovery."""

from __future__ import annotations

from tests.engine.engine_runs import (
    ORDERS,
    ROOT,
    codes,
    judge_one,
    make_run,
    model,
    refund_run,
    span,
    tool,
)

LOOKUP = tool("lookup_order", {"customer_id": "u1"}, ORDERS)
REFUND_B = tool("refund_api.create", {"order_id": "B-200", "amount": 40.0}, {"id": "re_1"})
REFUND_A = tool("refund_api.create", {"order_id": "A-100", "amount": 40.0}, {"id": "re_1"})
EMAIL = tool("send_email", {"to": "u1"}, {"sent": True})


def test_step_pattern_passes_in_order() -> None:
    """lookup -> mutate -> notify in that order is the competent path."""
    check = {
        "type": "step_pattern",
        "steps": [{"kind": "lookup"}, {"kind": "mutate"}, {"kind": "notify"}],
    }
    v = judge_one(check, make_run([LOOKUP, REFUND_B, EMAIL]))
    assert v.verdict == "pass"


def test_step_pattern_mutation_before_lookup() -> None:
    """Changing state before looking anything up is an order failure at the mutation."""
    check = {"type": "step_pattern", "steps": [{"kind": "lookup"}, {"kind": "mutate"}]}
    v = judge_one(check, make_run([REFUND_B, LOOKUP]))
    assert v.verdict == "fail"
    assert v.primary.code == "F-ACTION-ORDER"
    assert v.primary.span_ids == (span(0),)


def test_step_pattern_missing_step() -> None:
    """A pattern step that never ran is a missing step citing the run root."""
    check = {"type": "step_pattern", "steps": [{"kind": "lookup"}, {"tool": "send_email"}]}
    v = judge_one(check, make_run([LOOKUP]))
    assert codes(v) == ["F-ACTION-MISSING_STEP"]
    assert v.primary.span_ids == (ROOT,)


def test_step_pattern_step_that_ran_in_order_but_failed() -> None:
    """A refund attempted in its turn that failed is not "out of order": it failed.

    Regression: this was reported as F-ACTION-ORDER "ran but not in the required order".
    """
    check = {"type": "step_pattern", "steps": [{"kind": "lookup"}, {"kind": "mutate"}]}
    failed = tool("refund_api.create", {"order_id": "B-200"}, None, status="error")
    v = judge_one(check, make_run([LOOKUP, failed]))
    assert codes(v) == ["F-ACTION-MISSING_STEP"]
    assert v.primary.span_ids == (span(1),)  # the failed attempt, not the root
    assert "ran in order (step 1) but failed (ToolError)" in v.primary.explanation
    assert "not in the required order" not in v.primary.explanation
    # a retry that succeeds completes the pattern
    assert judge_one(check, make_run([LOOKUP, failed, REFUND_B])).verdict == "pass"


def test_step_pattern_out_of_order_is_still_order() -> None:
    """The step ran only before its turn: that is the order failure, citing that call."""
    check = {
        "type": "step_pattern",
        "steps": [{"tool": "send_email"}, {"kind": "lookup"}],
        "mutation_requires_lookup": False,
    }
    v = judge_one(check, make_run([LOOKUP, EMAIL]))
    assert codes(v) == ["F-ACTION-ORDER"]
    assert v.primary.span_ids == (span(0),)
    assert "not in the required order" in v.primary.explanation


def test_entity_binding_any_returned_entity_from_tool_metadata() -> None:
    """Without a filter, any id the lookup returned (tools.entities) binds."""
    check = {"type": "entity_binding", "tool": "refund_api.create", "argument": "order_id"}
    assert judge_one(check, make_run([LOOKUP, REFUND_A])).verdict == "pass"
    unknown = tool("refund_api.create", {"order_id": "Z-9"}, {})
    v = judge_one(check, make_run([LOOKUP, unknown]))
    assert codes(v) == ["F-ACTION-ARG-ENTITY_BINDING"]


def test_entity_binding_filter_selects_which_entity_qualifies() -> None:
    """A returned but non-qualifying entity (not the duplicate) fails the binding."""
    check = {
        "type": "entity_binding",
        "tool": "refund_api.create",
        "argument": "order_id",
        "source": {"tool": "lookup_order", "path": "orders[?is_duplicate == `true`].id"},
    }
    assert judge_one(check, make_run([LOOKUP, REFUND_B])).verdict == "pass"
    v = judge_one(check, make_run([LOOKUP, REFUND_A]))
    assert v.primary.code == "F-ACTION-ARG-ENTITY_BINDING"
    assert v.primary.span_ids == (span(1),)


def test_entity_binding_ignores_failed_lookup() -> None:
    """Entities only count when the lookup succeeded."""
    failed = tool("lookup_order", {"customer_id": "u1"}, ORDERS, status="error")
    check = {"type": "entity_binding", "tool": "refund_api.create", "argument": "order_id"}
    v = judge_one(check, make_run([failed, REFUND_B]))
    assert codes(v) == ["F-ACTION-ORDER"]


def test_entity_binding_names_lookups_that_ran_without_entities() -> None:
    """A lookup ran, it just declares no ``entities:``: say that, not "before any lookup".

    Regression: the explanation claimed the call "ran before any successful lookup".
    """
    check = {"type": "entity_binding", "tool": "refund_api.create", "argument": "order_id"}
    policy = tool("check_policy", {"order_id": "B-200"}, {"approved": True})
    v = judge_one(check, make_run([policy, REFUND_B]))
    assert codes(v) == ["F-ACTION-ORDER"]
    text = v.primary.explanation
    assert "ran after successful lookup(s) check_policy" in text
    assert "declares `entities:`" in text
    assert "lookups that do: lookup_order" in text
    assert "before any successful lookup" not in text
    # no lookup at all: the original wording, naming the lookups that would qualify
    v = judge_one(check, make_run([REFUND_B]))
    assert v.primary.explanation == (
        "refund_api.create ran before any successful lookup that returns entities (lookup_order)"
    )


def test_entity_binding_insufficient_evidence() -> None:
    """Arguments that are not JSON, or lookup results not captured, are never a silent pass."""
    check = {"type": "entity_binding", "tool": "refund_api.create", "argument": "order_id"}
    raw = tool("refund_api.create", "order B-200", None, args_json=False)
    v = judge_one(check, make_run([LOOKUP, raw]))
    assert v.verdict == "warn"
    assert codes(v) == ["F-EVIDENCE-ARGS_NOT_JSON"]
    assert v.outcomes[0].result == "insufficient_evidence"
    blind = tool("lookup_order", {"customer_id": "u1"}, None)
    v = judge_one(check, make_run([blind, REFUND_B]))
    assert codes(v) == ["F-EVIDENCE-RESULT_MISSING"]


def test_precedence_with_binding() -> None:
    """B.args bound to A.result: right value passes, wrong value fails, B before A is order."""
    check = {
        "type": "precedence",
        "before": "lookup_order",
        "after": "refund_api.create",
        "bind": {"after": "args.order_id", "before": "result.orders[*].id"},
    }
    assert judge_one(check, make_run([LOOKUP, REFUND_B])).verdict == "pass"
    bad = tool("refund_api.create", {"order_id": "C-1"}, {})
    assert codes(judge_one(check, make_run([LOOKUP, bad]))) == ["F-ACTION-ARG-ENTITY_BINDING"]
    assert codes(judge_one(check, make_run([REFUND_B, LOOKUP]))) == ["F-ACTION-ORDER"]


def test_required_and_forbidden_steps() -> None:
    """Required tools must succeed; forbidden tools must not run at all."""
    req = {"type": "required_steps", "tools": ["send_email"]}
    assert judge_one(req, make_run([LOOKUP, EMAIL])).verdict == "pass"
    failed_email = tool("send_email", {}, None, status="error")
    assert codes(judge_one(req, make_run([LOOKUP, failed_email]))) == ["F-ACTION-MISSING_STEP"]
    forb = {"type": "forbidden_steps", "tools": ["refund_api.create"]}
    v = judge_one(forb, make_run([LOOKUP, REFUND_B]))
    assert codes(v) == ["F-ACTION-FORBIDDEN_STEP"]
    assert v.primary.span_ids == (span(1),)


def test_reference_modes_and_metrics() -> None:
    """strict/unordered/subset/superset behave like agentevals and metrics are reported."""
    ref = [
        {"tool": "lookup_order", "args": {"customer_id": "u1"}},
        {"tool": "refund_api.create", "args": {"order_id": "B-200", "amount": 40.0}},
    ]
    run = make_run([LOOKUP, REFUND_B, EMAIL])
    strict = judge_one({"type": "reference", "mode": "strict", "calls": ref}, run)
    assert codes(strict) == ["F-ACTION-REFERENCE_MISMATCH"]  # the extra email
    superset = judge_one({"type": "reference", "mode": "superset", "calls": ref}, run)
    assert superset.verdict == "pass"
    assert superset.metrics["tool_selection_accuracy"] == 1.0
    assert superset.metrics["argument_correctness"] == 1.0
    assert superset.metrics["excess_step_ratio"] == 0.5
    swapped = make_run([REFUND_B, LOOKUP])
    assert (
        judge_one({"type": "reference", "mode": "unordered", "calls": ref}, swapped).verdict
        == "pass"
    )
    assert (
        judge_one({"type": "reference", "mode": "strict", "calls": ref}, swapped).verdict == "fail"
    )
    subset = judge_one({"type": "reference", "mode": "subset", "calls": ref}, make_run([LOOKUP]))
    assert subset.verdict == "pass"


def test_reference_argument_modes() -> None:
    """ignore/subset/predicate argument modes decide whether a call matches."""
    ref = [{"tool": "refund_api.create", "args": {"order_id": "B-200", "amount": 10.0}}]
    run = make_run([REFUND_B])
    exact = judge_one({"type": "reference", "calls": ref}, run)
    assert exact.verdict == "fail"
    assert exact.metrics["argument_correctness"] == 0.0
    ignore = {"type": "reference", "calls": ref, "args_mode": "ignore"}
    assert judge_one(ignore, run).verdict == "pass"
    subset_ref = [{"tool": "refund_api.create", "args": {"order_id": "B-200"}}]
    assert (
        judge_one({"type": "reference", "calls": subset_ref, "args_mode": "subset"}, run).verdict
        == "pass"
    )
    pred = {
        "type": "reference",
        "calls": ref,
        "overrides": {
            "refund_api.create": {"predicate": "value.actual.order_id == value.expected.order_id"}
        },
    }
    assert judge_one(pred, run).verdict == "pass"


def test_duplicate_side_effect() -> None:
    """The same refund twice without an idempotency key is a duplicate; with one it is not."""
    check = {"type": "no_duplicate_side_effect"}
    v = judge_one(check, make_run([LOOKUP, REFUND_B, REFUND_B]))
    assert codes(v) == ["F-ACTION-DUPLICATE_SIDE_EFFECT"]
    assert v.primary.span_ids == (span(2),)
    keyed = tool(
        "refund_api.create", {"order_id": "B-200", "amount": 40.0, "idempotency_key": "k"}, {}
    )
    assert judge_one(check, make_run([keyed, keyed])).verdict == "pass"
    failed = tool("refund_api.create", {"order_id": "B-200", "amount": 40.0}, None, status="error")
    assert judge_one(check, make_run([failed, REFUND_B])).verdict == "pass"


def test_loop() -> None:
    """The third identical call is flagged once; differing arguments are not a loop."""
    check = {"type": "no_loop", "max_repeats": 3}
    v = judge_one(check, make_run([LOOKUP, LOOKUP, LOOKUP, LOOKUP]))
    assert codes(v) == ["F-ACTION-LOOP"]
    assert v.primary.span_ids == (span(2),)
    other = tool("lookup_order", {"customer_id": "u2"}, ORDERS)
    assert judge_one(check, make_run([LOOKUP, other, LOOKUP])).verdict == "pass"


def test_recovery() -> None:
    """A failed call needs a retry or an answer that reports the failure."""
    check = {"type": "recovery"}
    failed = tool("refund_api.create", {"order_id": "B-200"}, None, status="error")
    retried = make_run([failed, REFUND_B], "Refund issued.")
    assert judge_one(check, retried).verdict == "pass"
    reported = make_run([failed], "Sorry, the refund system is unavailable right now.")
    assert judge_one(check, reported).verdict == "pass"
    silent = make_run([failed, model()], "All done!")
    v = judge_one(check, silent)
    assert codes(v) == ["F-ACTION-NO_RECOVERY"]
    assert v.primary.span_ids == (span(0),)
    no_answer = make_run([failed], None)
    assert codes(judge_one(check, no_answer)) == ["F-EVIDENCE-NO_FINAL_ANSWER"]


def test_refund_run_helper_is_consistent() -> None:
    """The scenario builder keeps span ids aligned with step indexes (other tests rely on it)."""
    run = refund_run("healthy")
    assert [s.span_id for s in run.steps] == [span(i) for i in range(len(run.steps))]
