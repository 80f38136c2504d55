"""``claim_evidence`` backed by any of several tools (issue 19 §2): a refund is issued by
cancelling a pending order or by returning a delivered one; either call backs the claim,
and the claim's entity is read from whichever of them ran."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.conversation_runs import Say, User, convo, say, user
from tests.engine.engine_runs import codes, judge_one, make_run, rules_text, tool
from tracejudge.engine import RulesError, load_rules_text

RETAIL: dict[str, Any] = {
    "get_order_details": {"kind": "lookup"},
    "cancel_pending_order": {"kind": "mutate"},
    "return_delivered_order_items": {"kind": "mutate"},
    "modify_user_address": {"kind": "mutate"},
}
BACKERS = ["cancel_pending_order", "return_delivered_order_items"]
CLAIM: dict[str, Any] = {
    "type": "claim_evidence",
    "claim": "(?i)refund (for order (?P<order>#W\\d+) )?has been issued",
    "tool": BACKERS,
}
RETURN = tool("return_delivered_order_items", {"order_id": "#W2378156"}, {"status": "ok"})
CANCEL = tool("cancel_pending_order", {"order_id": "#W5918442"}, {"status": "cancelled"})
ADDRESS = tool("modify_user_address", {"user_id": "u1"}, {"status": "ok"})


def _final(check: dict[str, Any], steps: list[Any]) -> Any:
    run = make_run(steps, "Your refund has been issued.")
    return judge_one(check, run, layer="outcome", tools=RETAIL)


@pytest.mark.parametrize("backer", [RETURN, CANCEL])
def test_any_listed_tool_backs_the_final_answer_claim(backer: Any) -> None:
    """Without ``messages``: one successful call of any listed tool backs the claim."""
    assert _final(CLAIM, [backer]).verdict == "pass"


def test_no_listed_tool_leaves_the_claim_unsupported() -> None:
    """Another write backs nothing; the explanation names every tool that would have."""
    v = _final(CLAIM, [ADDRESS])
    assert codes(v) == ["F-OUTPUT-UNSUPPORTED_CLAIM"]
    assert "no successful cancel_pending_order/return_delivered_order_items call ran" in (
        v.primary.explanation
    )
    failed = tool("cancel_pending_order", {"order_id": "#W5918442"}, None, status="error")
    v = _final(CLAIM, [failed])
    assert codes(v) == ["F-OUTPUT-UNSUPPORTED_CLAIM"]
    assert "attempted and failed" in v.primary.explanation


def test_a_single_tool_still_names_one_backer() -> None:
    """The old form, ``tool: name``, means what it meant."""
    one = {**CLAIM, "tool": "cancel_pending_order"}
    assert _final(one, [CANCEL]).verdict == "pass"
    assert codes(_final(one, [RETURN])) == ["F-OUTPUT-UNSUPPORTED_CLAIM"]


def test_the_claimed_entity_is_read_from_any_listed_tool() -> None:
    """Per message, with ``entity``: the order the claim names must be the one some backing
    call (of either tool) acted on."""
    check = {**CLAIM, "messages": "all", "entity": {"group": "order", "argument": "order_id"}}

    def judged(text: str) -> Any:
        script: list[User | Say] = [user("Refunds, please."), say(None, RETURN, CANCEL), say(text)]
        return judge_one(check, convo(script), layer="outcome", tools=RETAIL)

    assert judged("The refund for order #W2378156 has been issued.").verdict == "pass"
    assert judged("The refund for order #W5918442 has been issued.").verdict == "pass"
    v = judged("The refund for order #W0000001 has been issued.")
    assert codes(v) == ["F-OUTPUT-CLAIM_ENTITY_MISMATCH"]


def test_an_unknown_tool_in_the_list_fails_at_load() -> None:
    """Each listed name is checked against the declared tools."""
    check = {**CLAIM, "tool": ["cancel_pending_order", "return_delivered_order_item"]}
    with pytest.raises(RulesError) as info:
        load_rules_text(rules_text(check, layer="outcome", tools=RETAIL))
    assert "return_delivered_order_item" in str(info.value)
    assert "did you mean" in str(info.value)
