"""Outcome (claims, identifiers, state), budget and CEL predicate checks."""

from __future__ import annotations

from tests.engine.engine_runs import FINAL, codes, judge_one, make_run, model, span, tool
from tracejudge.model.run import Step

REFUND = tool(
    "refund_api.create", {"order_id": "B-200"}, {"id": "re_ABC123", "status": "succeeded"}
)
CLAIM = {
    "type": "claim_evidence",
    "claim": "(?i)refund (is|was) (issued|on its way)",
    "tool": "refund_api.create",
}


def test_claim_supported_unsupported_and_unclaimed() -> None:
    """A claim needs a successful call; no claim needs nothing; a failed call does not count."""
    said = "Your refund is on its way."
    assert judge_one(CLAIM, make_run([REFUND], said), layer="outcome").verdict == "pass"
    assert judge_one(CLAIM, make_run([], "I could not help."), layer="outcome").verdict == "pass"
    v = judge_one(CLAIM, make_run([model()], said), layer="outcome")
    assert codes(v) == ["F-OUTPUT-UNSUPPORTED_CLAIM"]
    assert v.primary.span_ids == (FINAL,)
    failed = tool("refund_api.create", {}, None, status="error")
    v = judge_one(CLAIM, make_run([failed], said), layer="outcome")
    assert "attempted and failed" in v.primary.explanation


def test_claim_by_kind_and_missing_answer() -> None:
    """Evidence may be any tool of a kind; no final answer is insufficient evidence."""
    check = {"type": "claim_evidence", "claim": "(?i)done", "kind": "mutate"}
    assert judge_one(check, make_run([REFUND], "Done"), layer="outcome").verdict == "pass"
    v = judge_one(check, make_run([REFUND], None), layer="outcome")
    assert codes(v) == ["F-EVIDENCE-NO_FINAL_ANSWER"]
    assert v.verdict == "warn"


def test_identifier_must_come_from_a_result() -> None:
    """A refund id the tools never returned is invented."""
    check = {"type": "identifier_evidence", "pattern": "(?P<id>re_[A-Za-z0-9]+)"}
    assert (
        judge_one(check, make_run([REFUND], "Refund re_ABC123."), layer="outcome").verdict == "pass"
    )
    v = judge_one(check, make_run([REFUND], "Refund re_ZZZ999."), layer="outcome")
    assert codes(v) == ["F-OUTPUT-UNSUPPORTED_IDENTIFIER"]
    assert "re_ZZZ999" in v.primary.explanation


def test_state_equals_and_cel() -> None:
    """Expected state from the last successful result, by value or by CEL predicate."""
    eq = {
        "type": "state",
        "expect": [{"tool": "refund_api.create", "path": "status", "equals": "succeeded"}],
    }
    assert judge_one(eq, make_run([REFUND]), layer="outcome").verdict == "pass"
    pending = tool("refund_api.create", {}, {"status": "pending"})
    v = judge_one(eq, make_run([pending]), layer="outcome")
    assert codes(v) == ["F-OUTPUT-STATE_MISMATCH"]
    assert v.primary.span_ids == (span(0),)
    assert codes(judge_one(eq, make_run([]), layer="outcome")) == ["F-OUTPUT-STATE_MISMATCH"]
    cel = {
        "type": "state",
        "expect": [
            {
                "tool": "refund_api.create",
                "path": "status",
                "cel": "value in ['succeeded', 'pending']",
            }
        ],
    }
    assert judge_one(cel, make_run([pending]), layer="outcome").verdict == "pass"
    blind = tool("refund_api.create", {}, None)
    assert codes(judge_one(cel, make_run([blind]), layer="outcome")) == [
        "F-EVIDENCE-RESULT_MISSING"
    ]


def test_budget_limits_cite_the_step_that_crossed() -> None:
    """Each limit reports the step where it was exceeded, so it can be the earliest cause."""
    steps: list[Step] = [
        model(tin=1000, tout=100),
        REFUND,
        model(tin=1000, tout=100),
        model(tin=1000, tout=100),
    ]
    run = make_run(steps)
    check = {
        "type": "budget",
        "max_steps": 3,
        "max_model_calls": 2,
        "max_total_tokens": 2000,
        "max_duration_s": 0.02,
        "max_cost_usd": 0.0001,
    }
    v = judge_one(
        check, run, layer="budget", prices={"gpt-4o-mini": {"input": 0.15, "output": 0.6}}
    )
    got = {f.code: f.step_index for f in v.findings}
    assert got == {
        "F-BUDGET-STEPS": 3,
        "F-BUDGET-MODEL_CALLS": 3,
        "F-BUDGET-TOKENS": 2,
        "F-BUDGET-TIME": 2,  # steps end at 10, 20, 30 ms: the third ends past 20 ms
        "F-BUDGET-COST": 0,  # 1000 in + 100 out tokens already cost $0.00021
    }
    assert v.primary.code == "F-BUDGET-COST"
    ok = {"type": "budget", "max_steps": 4, "max_total_tokens": 3300, "max_cost_usd": 1}
    assert (
        judge_one(
            ok, run, layer="budget", prices={"gpt-4o-mini": {"input": 0.15, "output": 0.6}}
        ).verdict
        == "pass"
    )


def test_budget_insufficient_evidence() -> None:
    """Missing token counts or an unknown price make the budget undecidable, not a pass."""
    run = make_run([model(tin=None, tout=None), model("mystery-model")])
    v = judge_one({"type": "budget", "max_cost_usd": 1.0}, run, layer="budget")
    assert sorted(codes(v)) == ["F-EVIDENCE-NO_PRICE", "F-EVIDENCE-NO_TOKENS"]
    assert v.layers["budget"] == "warn"


def test_cel_predicate() -> None:
    """True passes, false fails with the message, an error is insufficient evidence."""
    run = make_run([REFUND], "ok", user_id="u1")
    ok = {"type": "cel", "expr": "run.tools.exists(t, t.name == 'refund_api.create' && t.ok)"}
    assert judge_one(ok, run).verdict == "pass"
    bad = {"type": "cel", "expr": "run.tool_calls == 0", "message": "no tools expected"}
    v = judge_one(bad, run)
    assert codes(v) == ["F-CUSTOM-PREDICATE"]
    assert v.primary.explanation == "no tools expected"
    err = {"type": "cel", "expr": "run.tools[0].args.nope == 1"}
    v = judge_one(err, run)
    assert codes(v) == ["F-EVIDENCE-CEL_ERROR"]
    not_bool = {"type": "cel", "expr": "run.tool_calls"}
    assert codes(judge_one(not_bool, run)) == ["F-EVIDENCE-CEL_ERROR"]


def test_a_false_predicate_is_explained_by_its_rule_not_its_expression() -> None:
    """Without a message, a false CEL predicate says what its rule's description says (the
    rule id on the finding leads to the expression); with neither, the expression."""
    import json

    from tests.engine.engine_runs import rules_text
    from tracejudge.engine import Engine, load_rules_text

    run = make_run([REFUND], "ok", user_id="u1")
    check = {"type": "cel", "expr": "run.tool_calls == 0"}
    doc = json.loads(rules_text(check, layer="policy"))
    doc["rules"][0]["description"] = "Answer\n  without calling tools."
    primary = Engine(load_rules_text(json.dumps(doc))).judge(run).primary
    assert primary is not None
    assert (primary.code, primary.rule_id) == ("F-CUSTOM-PREDICATE", "r1")
    assert primary.explanation == "Answer without calling tools."
    v = judge_one(check, run, layer="policy")
    assert v.primary.explanation == "predicate is false: run.tool_calls == 0"
