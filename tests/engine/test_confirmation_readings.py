"""``user_confirmation`` on real shapes of text that were misread (issue 19, section 1).

Each conversation is invented, in the shape of a real retail or airline run: a proposal
asking for the answer in words, a list-form answer, a user asking the agent to confirm, a
greeting before a yes, and answers that say yes to one thing and no to another.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.engine.conversation_runs import convo, say, user
from tests.engine.engine_runs import codes, judge_one, span, tool

RETAIL: dict[str, Any] = {
    "get_order_details": {"kind": "lookup"},
    "return_delivered_order_items": {"kind": "mutate"},
}
RULE: dict[str, Any] = {"type": "user_confirmation", "tools": ["return_delivered_order_items"]}
ORDER = tool(
    "get_order_details",
    {"order_id": "#W2611340"},
    {
        "order_id": "#W2611340",
        "items": [
            {"item_id": "6777246137", "name": "Desk Lamp", "price": 135.24},
            {"item_id": "4579334072", "name": "Water Bottle", "price": 54.85},
        ],
    },
)
RETURN_LAMP = tool(
    "return_delivered_order_items",
    {"order_id": "#W2611340", "item_ids": ["6777246137"], "payment_method_id": "card_4421"},
    {"status": "return requested"},
)


def _judge(script: list[Any], strict: bool = False, rule: dict[str, Any] = RULE) -> Any:
    return judge_one(rule, convo(script), layer="policy", tools=RETAIL, strict=strict)


def _return_after(proposal: str, reply: str) -> Any:
    return _judge(
        [
            user("I want to return the lamp from order #W2611340."),
            say(None, ORDER),
            say(proposal),
            user(reply),
            say(None, RETURN_LAMP),
            say("The return of the Desk Lamp is requested."),
        ]
    )


@pytest.mark.parametrize(
    "proposal",
    [
        "Return the Desk Lamp for $135.24 to card_4421. Reply 'yes' to submit the return "
        "now, or 'no' to cancel.",
        "Return the Desk Lamp for $135.24. Answer yes/no.",
        "Return the Desk Lamp for $135.24. Awaiting your confirmation.",
        "Return details: Desk Lamp, $135.24. confirm_to_proceed",
    ],
)
def test_a_proposal_asking_for_the_answer_in_words_is_a_proposal(proposal: str) -> None:
    """Before: "answers no proposal" (no question mark, no bare "confirm")."""
    assert _return_after(proposal, "yes").verdict == "pass"


def test_an_answer_in_list_form_is_read() -> None:
    """Before: "1) Yes" was no answer word where answers stand: NO_CONFIRMATION."""
    proposal = "1) Return the Desk Lamp? 2) Refund to card_4421?"
    reply = "1) Yes \u2014 please return the lamp. 2) Yes \u2014 refund to my card."
    assert _return_after(proposal, reply).verdict == "pass"


def test_the_user_asking_the_agent_to_confirm_is_no_yes() -> None:
    """Before: "please confirm" was the user's yes, the greeting the proposal: a write with
    no proposal at all passed."""
    v = _judge(
        [
            say("Hello! How can I help you today?"),
            user(
                "Before you change anything, please confirm the refund goes to my card. "
                "I want to return the lamp from #W2611340."
            ),
            say(None, ORDER),
            say(None, RETURN_LAMP),
            say("Done."),
        ]
    )
    assert codes(v) == ["F-POLICY-NO_CONFIRMATION"]
    assert v.primary.span_ids == (span(4),)  # the return


def test_a_greeting_is_no_proposal() -> None:
    """A yes after "How can I help you today?" answers nothing."""
    v = _judge(
        [
            say("Hi! How can I help you today?"),
            user("Yes, return the lamp from #W2611340."),
            say(None, ORDER),
            say(None, RETURN_LAMP),
            say("Done."),
        ]
    )
    assert codes(v) == ["F-POLICY-NO_CONFIRMATION"]
    assert "answers no proposal" in v.primary.explanation


def test_a_question_then_go_ahead_yes_confirms() -> None:
    """Before: the hesitation in the question came first, so the reply was a refusal."""
    reply = "Wait, does the refund go to my card? If so, go ahead. YES"
    assert _return_after("Return the Desk Lamp for $135.24?", reply).verdict == "pass"


def test_a_reply_that_holds_one_item_and_confirms_another() -> None:
    """The clause naming the call decides: the lamp is confirmed, the bottle is not."""
    reply = "Hold off on the bottle, go ahead with the lamp."
    proposal = "Shall I return the Desk Lamp and the Water Bottle?"
    assert _return_after(proposal, reply).verdict == "pass"
    bottle = tool(
        "return_delivered_order_items",
        {"order_id": "#W2611340", "item_ids": ["4579334072"], "payment_method_id": "card_4421"},
    )
    v = _judge(
        [
            user("Return items from #W2611340."),
            say(None, ORDER),
            say(proposal),
            user(reply),
            say(None, bottle),
            say("Done."),
        ]
    )
    assert codes(v) == ["F-POLICY-CONFIRMATION_DENIED"]


def test_a_yes_taken_back_is_undecided_and_strict_fails_it() -> None:
    """A yes, then a no in a later sentence that names nothing: a condition or a change of
    mind. Undecided, citing the reply; a warning, a failure with ``strict``."""
    reply = "Yes, go ahead. Actually, no."
    v = _return_after("Return the Desk Lamp for $135.24?", reply)
    assert v.verdict == "warn"
    assert codes(v) == ["F-UNDECIDED-CONFIRMATION"]
    assert v.findings[0].undecided
    assert reply in v.primary.explanation
    assert v.outcomes[0].result == "undecided"
    assert v.to_dict()["undecided"] == 1
    assert v.to_dict()["findings"][0]["undecided"] is True
    strict = _judge(
        [
            user("Return the lamp from #W2611340."),
            say(None, ORDER),
            say("Return the Desk Lamp for $135.24?"),
            user(reply),
            say(None, RETURN_LAMP),
            say("Done."),
        ],
        strict=True,
    )
    assert strict.verdict == "fail"
    assert codes(strict) == ["F-UNDECIDED-CONFIRMATION"]


@pytest.mark.parametrize(
    ("proposal", "reply"),
    [
        ("Return the Desk Lamp for $135.24?", None),
        ("Return the Desk Lamp for $135.24?", "[REDACTED]"),
        ("Return [REDACTED] to card [REDACTED].", "yes"),
    ],
)
def test_dropped_or_redacted_text_is_undecided_not_a_pass(proposal: str, reply: str | None) -> None:
    """A reply or proposal that cannot be read is neither a yes nor a failure."""
    script: list[Any] = [
        user("Return the lamp from #W2611340."),
        say(None, ORDER),
        say(proposal),
        user(reply or ""),
        say(None, RETURN_LAMP),
        say("Done."),
    ]
    run = convo(script)
    if reply is None:
        run.turns[4] = dataclasses.replace(run.turns[4], text=None)
    v = judge_one(RULE, run, layer="policy", tools=RETAIL)
    assert v.verdict == "warn"
    assert codes(v) == ["F-UNDECIDED-CONFIRMATION"]


def test_reply_latest_looking_back_to_an_undecided_reply_is_undecided() -> None:
    """``reply: latest`` passes over a follow-up answer to the reply before it; when that
    reply says yes and no, the result is undecided, not a confident "does not confirm"."""
    v = _judge(
        [
            user("Return the lamp from #W2611340."),
            say(None, ORDER),
            say("Return the Desk Lamp for $135.24?"),
            user("Yes, go ahead. Actually, no."),
            say("Which card should the refund go to?"),
            user("The Visa."),
            say(None, RETURN_LAMP),
            say("Done."),
        ],
        rule={**RULE, "reply": "latest"},
    )
    assert codes(v) == ["F-UNDECIDED-CONFIRMATION"]
    assert "(turn 4)" in v.primary.explanation


def test_an_instruction_naming_the_call_is_undecided_not_a_failure() -> None:
    """tau2 retail run 40/chloe-gpt4o-3: "Keep the card, or switch to the Visa ending 8902?"
    answered by "Please switch the payment to my Visa ending in 8902". An instruction
    naming the call answers the question without a yes: whether it is the policy's
    "explicit confirmation (yes)" needs reading, so it is undecided (before: a confident
    F-POLICY-NO_CONFIRMATION on a good run)."""
    proposal = "Shall I return the Desk Lamp for $135.24 to card_4421, or keep it?"
    v = _return_after(proposal, "Please return the desk lamp, thanks.")
    assert codes(v) == ["F-UNDECIDED-CONFIRMATION"]
    assert "tells the agent to do it" in v.primary.explanation


@pytest.mark.parametrize(
    "reply",
    [
        "Could you please return the desk lamp?",  # a question, not an instruction
        "Please tell me more about the water bottle.",  # asks for information
        "Please note that I moved house last month.",  # names nothing of the call
    ],
)
def test_what_is_not_an_instruction_to_do_the_call_still_fails(reply: str) -> None:
    proposal = "Shall I return the Desk Lamp for $135.24 to card_4421, or keep it?"
    assert codes(_return_after(proposal, reply)) == ["F-POLICY-NO_CONFIRMATION"]


def test_an_instruction_does_not_excuse_details_never_listed() -> None:
    """Whatever the instruction means, a changed value no proposal named is a failure."""
    rule = {**RULE, "mention_arguments": ["payment_method_id"]}
    script = [
        user("I want to return the lamp from order #W2611340."),
        say(None, ORDER),
        say("Shall I return the Desk Lamp, or keep it?"),
        user("Please return the desk lamp."),
        say(None, RETURN_LAMP),
        say("Done."),
    ]
    v = _judge(script, rule=rule)
    assert codes(v) == ["F-POLICY-UNCONFIRMED_DETAILS"]
    script[2] = say("Shall I return the Desk Lamp to card_4421, or keep it?")
    assert codes(_judge(script, rule=rule)) == ["F-UNDECIDED-CONFIRMATION"]
