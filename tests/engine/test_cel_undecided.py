"""A CEL rule that says what it cannot decide: ``undecided`` names the run's turns or
steps whose judgement is a matter of meaning, each an ``F-UNDECIDED-PREDICATE`` citing it
with the user's words before it — never a silent pass, never a confident fail.

The runs are invented conversations of the shapes found in the airline dev set ("transfer
to a human agent if and only if the request cannot be handled within the scope of your
actions"): whether a request was in scope is meaning, so the rule decides only what the
structure shows and leaves the rest to a grader or a person."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.conversation_runs import convo, say, user
from tests.engine.engine_runs import codes, judge_one, rules_text, span, tool
from tracejudge.engine import RulesError, load_rules_text
from tracejudge.model.run import Run

TOOLS: dict[str, Any] = {
    "get_reservation_details": {"kind": "lookup"},
    "cancel_reservation": {"kind": "mutate"},
    "transfer_to_human_agents": {"kind": "notify"},
}
# The policy's one stated case of "transfer is needed": a trip with a segment already flown.
FLOWN = (
    "run.tools.exists(r, r.name == 'get_reservation_details' && r.ok && r.index < t.index && "
    "r.result.flights.exists(f, f.date < '2024-05-15'))"
)
TRANSFER_RULE: dict[str, Any] = {
    "type": "cel",
    "undecided": f"run.tools.filter(t, t.name == 'transfer_to_human_agents' && !({FLOWN}))",
    "undecided_message": "whether the request could be handled within the agent's actions",
}


def _transfer_after(request: str, flights: list[dict[str, str]]) -> Run:
    details = tool("get_reservation_details", {"reservation_id": "SI5UKW"}, {"flights": flights})
    return convo(
        [
            user(request),
            say(None, details),
            say("I can't cancel this trip myself; let me transfer you."),
            user("ok"),
            say(
                None, tool("transfer_to_human_agents", {"summary": "cancel"}, "Transfer successful")
            ),
            say("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."),
        ]
    )


def test_a_transfer_the_structure_cannot_justify_is_undecided_citing_the_request() -> None:
    """A transfer after an in-scope-looking request: undecided at the transfer's span,
    quoting the user's first and last words before it; the verdict is not a failure, and
    ``strict`` gives it the rule's severity."""
    run = _transfer_after(
        "Hi! I need to cancel my flights under reservation ID SI5UKW.",
        [{"date": "2024-05-20"}],
    )
    v = judge_one(TRANSFER_RULE, run, layer="policy", tools=TOOLS)
    assert codes(v) == ["F-UNDECIDED-PREDICATE"]
    assert v.verdict != "fail"
    finding = v.findings[0]
    transfer = next(
        i for i, s in enumerate(run.steps) if getattr(s, "name", "") == "transfer_to_human_agents"
    )
    assert finding.undecided
    assert finding.span_ids == (span(transfer),)
    assert finding.explanation == (
        "whether the request could be handled within the agent's actions: "
        f"transfer_to_human_agents (step {transfer}), after the user said "
        "«Hi! I need to cancel my flights under reservation ID SI5UKW.» ... «ok»"
    )
    strict = judge_one(TRANSFER_RULE, run, layer="policy", tools=TOOLS, strict=True)
    assert strict.verdict == "fail"


def test_the_policys_stated_case_decides_and_no_transfer_is_nothing_to_decide() -> None:
    """A flown segment in the looked-up trip is the policy's own "transfer is needed": no
    finding. A run with no transfer has nothing undecided."""
    run = _transfer_after("Cancel SI5UKW please.", [{"date": "2024-05-01"}, {"date": "2024-05-20"}])
    assert codes(judge_one(TRANSFER_RULE, run, layer="policy", tools=TOOLS)) == []
    plain = convo([user("What is my balance?"), say("It is $40.")])
    assert judge_one(TRANSFER_RULE, plain, layer="policy", tools=TOOLS).verdict == "pass"


def test_undecided_turns_are_quoted_and_a_false_expr_fails_first() -> None:
    """Turns returned by ``undecided`` are cited at their own span with their text; when
    ``expr`` is false the rule fails and ``undecided`` is not asked."""
    run = convo([user("Please just get me a human, now."), say("Sure.")])
    check = {"type": "cel", "expr": "true", "undecided": "run.turns.filter(u, u.role == 'user')"}
    v = judge_one(check, run, layer="policy", tools=TOOLS)
    assert codes(v) == ["F-UNDECIDED-PREDICATE"]
    assert v.findings[0].span_ids == (run.turns[0].span_id,)
    assert v.findings[0].explanation == (
        "the run's structure cannot decide this: user said «Please just get me a human, now.»"
    )
    failing = {**check, "expr": "false", "message": "never"}
    v = judge_one(failing, run, layer="policy", tools=TOOLS)
    assert codes(v) == ["F-CUSTOM-PREDICATE"]


@pytest.mark.parametrize(
    ("undecided", "said"),
    [
        ("run.tools.size() > 0", "not a list of the run's turns or steps"),
        ("['a']", "not one of run.turns, run.tools or run.models"),
        ("run.nope.filter(x, true)", "`undecided` could not be evaluated"),
    ],
)
def test_an_undecided_expression_that_names_nothing_of_the_run_is_insufficient_evidence(
    undecided: str, said: str
) -> None:
    """Anything but a list of the run's own turns and steps is ``F-EVIDENCE-CEL_ERROR``
    saying what it got: never read as "nothing undecided"."""
    run = convo([user("hi"), say("hello")])
    v = judge_one({"type": "cel", "undecided": undecided}, run, layer="policy", tools=TOOLS)
    assert codes(v) == ["F-EVIDENCE-CEL_ERROR"]
    assert said in v.findings[0].explanation


def test_a_cel_rule_with_neither_expression_is_refused_with_its_path() -> None:
    """``expr`` or ``undecided`` is required; a bad ``undecided`` names its own path."""
    with pytest.raises(RulesError) as e:
        load_rules_text(rules_text({"type": "cel", "message": "m"}, tools=TOOLS))
    assert "rules[0].check" in str(e.value)
    with pytest.raises(RulesError) as e:
        load_rules_text(rules_text({"type": "cel", "undecided": "run.tools.filter("}, tools=TOOLS))
    assert "rules[0].check.undecided" in str(e.value)
