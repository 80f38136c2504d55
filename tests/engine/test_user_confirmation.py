"""``user_confirmation``: a write needs the user's yes to the agent's proposal before it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.conversation_runs import Say, User, convo, say, user
from tests.engine.engine_runs import codes, judge_one, make_run, rules_text, span, tool
from tracejudge.engine import RulesError, load_rules_text
from tracejudge.engine.checks.call_naming import mentions
from tracejudge.model.run import ToolCall

AIRLINE: dict[str, Any] = {
    "get_reservation_details": {"kind": "lookup"},
    "cancel_reservation": {"kind": "mutate"},
    "update_reservation_flights": {"kind": "mutate"},
    "update_reservation_baggages": {"kind": "mutate"},
}
RULE: dict[str, Any] = {"type": "user_confirmation", "tools": ["cancel_reservation"]}
DETAILS = tool("get_reservation_details", {"reservation_id": "ZFA04Y"}, {"status": "ok"})
CANCEL = tool("cancel_reservation", {"reservation_id": "ZFA04Y"}, {"status": "cancelled"})


def _judge(check: dict[str, Any], script: list[Any], **kw: Any) -> Any:
    return judge_one(check, convo(script, **kw), layer="policy", tools=AIRLINE)


def _cancel_after(reply: str, proposal: str = "I can cancel reservation ZFA04Y. Proceed?") -> Any:
    return _judge(
        RULE,
        [
            user("Please cancel my trip ZFA04Y."),
            say(None, DETAILS),
            say(proposal),
            user(reply),
            say(None, CANCEL),
            say("Your reservation ZFA04Y has been cancelled."),
        ],
    )


@pytest.mark.parametrize(
    "reply",
    ["Yes, please proceed.", "yes go ahead", "Sure.", "I confirm.", "OK", "No problem, do it."],
)
def test_a_yes_to_the_proposal_confirms(reply: str) -> None:
    """The usual affirmative replies confirm (``no problem`` is not a refusal)."""
    assert _cancel_after(reply).verdict == "pass"


@pytest.mark.parametrize(
    "reply",
    ["No.", "Don't do that yet.", "Don\u2019t.", "Wait, I need to check.", "Not yet, yes later"],
)
def test_a_no_before_any_yes_is_a_refusal(reply: str) -> None:
    """A negative before the first affirmative wins; the call is cited."""
    v = _cancel_after(reply)
    assert codes(v) == ["F-POLICY-CONFIRMATION_DENIED"]
    assert v.primary.span_ids == (span(4),)  # the cancel call
    assert v.primary.step_index == 4


def test_a_reply_that_neither_confirms_nor_refuses() -> None:
    """Silence on the question is not a yes."""
    v = _cancel_after("What is the refund policy?")
    assert codes(v) == ["F-POLICY-NO_CONFIRMATION"]
    assert "does not confirm" in v.primary.explanation


def test_a_write_with_no_user_turn_after_the_proposal_is_unconfirmed() -> None:
    """The agent asked, then acted in the same breath: the last user turn is the request."""
    v = _judge(
        RULE,
        [
            user("Please cancel my trip ZFA04Y."),
            say("I'll cancel reservation ZFA04Y now.", CANCEL),
            say("Done, it has been cancelled."),
        ],
    )
    assert codes(v) == ["F-POLICY-NO_CONFIRMATION"]
    assert "no assistant message came before" in v.primary.explanation


def test_a_yes_in_the_first_message_is_not_a_confirmation() -> None:
    """'Yes, cancel it' before the agent proposed anything confirms nothing."""
    v = _judge(RULE, [user("Yes, cancel ZFA04Y please."), say(None, CANCEL), say("Done.")])
    assert codes(v) == ["F-POLICY-NO_CONFIRMATION"]


def test_confirmation_is_read_before_the_requesting_turn_not_before_the_call() -> None:
    """A later "yes" (after the call was requested) cannot confirm it."""
    v = _judge(
        RULE,
        [
            user("Cancel ZFA04Y."),
            say("Shall I cancel ZFA04Y?"),
            user("Let me think."),
            say(None, CANCEL),
            say("It is cancelled. Anything else?"),
            user("Yes, that's right."),
            say("Great."),
        ],
    )
    assert codes(v) == ["F-POLICY-NO_CONFIRMATION"]


def test_kind_selects_tools_and_one_yes_covers_what_its_proposal_names() -> None:
    """``kind: mutate`` covers every mutate tool. A later write under the same "yes" is
    confirmed unless ``mention_arguments`` asks that the proposal named its details."""
    change = tool("update_reservation_flights", {"reservation_id": "ZFA04Y", "cabin": "economy"})
    script = [
        user("Cancel ZFA04Y."),
        say("Cancel ZFA04Y, is that right?"),
        user("Yes."),
        say(None, CANCEL),
        say("Cancelled. I also moved you to economy.", change),
        say("All done."),
    ]
    assert _judge({"type": "user_confirmation", "kind": "mutate"}, script).verdict == "pass"
    rule = {"type": "user_confirmation", "kind": "mutate", "mention_arguments": ["cabin"]}
    v = _judge(rule, script)
    assert codes(v) == ["F-POLICY-UNCONFIRMED_DETAILS"]
    assert v.primary.span_ids == (span(4),)  # the update, not the cancel (it has no cabin)


def test_attempts_all_judges_a_failed_write_and_successful_skips_it() -> None:
    """An attempted write without confirmation is the violation, unless told otherwise."""
    failed = tool("cancel_reservation", {"reservation_id": "ZFA04Y"}, None, status="error")
    script = [user("Cancel ZFA04Y."), say(None, failed), say("Sorry, that failed.")]
    assert codes(_judge(RULE, script)) == ["F-POLICY-NO_CONFIRMATION"]
    assert _judge({**RULE, "attempts": "successful"}, script).verdict == "pass"


def test_mention_arguments_must_be_in_the_proposal() -> None:
    """The yes must answer a proposal naming the reservation the call acts on."""
    rule = {**RULE, "mention_arguments": ["reservation_id"]}
    script = [
        user("Cancel my trip."),
        say("I will cancel reservation zfa04y (2 passengers). Shall I proceed?"),
        user("Yes"),
        say(None, CANCEL),
        say("Done."),
    ]
    assert _judge(rule, script).verdict == "pass"  # case-insensitive
    script[1] = say("I will cancel reservation XYZ123. Shall I proceed?")
    v = _judge(rule, script)
    assert codes(v) == ["F-POLICY-UNCONFIRMED_DETAILS"]
    assert "reservation_id='ZFA04Y'" in v.primary.explanation


def test_mention_arguments_reads_lists_and_numbers() -> None:
    """Every element of a list argument; numbers in their written forms."""
    update = tool(
        "update_reservation_flights",
        {"reservation_id": "ZFA04Y", "flights": [{"flight_number": "HAT001"}], "price": 84},
    )
    rule = {
        "type": "user_confirmation",
        "tools": ["update_reservation_flights"],
        "mention_arguments": ["flights[*].flight_number", "price"],
    }
    ok_text = "Change ZFA04Y to flight HAT001 for $84.00 total. Confirm?"
    script = [user("Change my flight"), say(ok_text), user("yes"), say(None, update), say("ok")]
    assert _judge(rule, script).verdict == "pass"
    script[1] = say("Change ZFA04Y to flight HAT001 for $184.00 total. Confirm?")
    assert codes(_judge(rule, script)) == ["F-POLICY-UNCONFIRMED_DETAILS"]


@pytest.mark.parametrize(
    ("text", "value", "found"),
    [
        ("$84.00 total", 84, True),
        ("$84 total", 84.0, True),
        ("$1,234.50", 1234.5, True),
        ("$184.00", 84, False),
        ("84.50", 84, False),
        ("reservation zfa04y", "ZFA04Y", True),
        ("reservation xzfa04y", "ZFA04Y", False),
        ("anything", None, True),
        ("anything", True, True),
    ],
)
def test_mentions(text: str, value: Any, found: bool) -> None:
    """Whole-token matches, numbers in common forms."""
    assert mentions(text.casefold(), value) is found


def test_no_user_turns_is_insufficient_evidence_never_a_pass() -> None:
    """A confirmation rule on a run whose messages were not captured cannot pass."""
    run = make_run([CANCEL], "Cancelled.")
    v = judge_one(RULE, run, layer="policy", tools=AIRLINE)
    assert codes(v) == ["F-EVIDENCE-NO_CONVERSATION"]
    assert v.verdict == "warn"
    assert v.primary.span_ids == (span(0),)
    # the final answer is the only turn there is (no model call's messages were captured)
    assert "no user turn" in v.primary.explanation
    # turns, but only the agent speaking: no user to confirm anything
    v = _judge(RULE, [say("Cancelling now.", CANCEL), say("Done.")])
    assert codes(v) == ["F-EVIDENCE-NO_CONVERSATION"]
    assert "no user turn" in v.primary.explanation
    # nothing to confirm: no finding at all
    assert _judge(RULE, [user("hi"), say("Hello!")]).verdict == "pass"


def test_a_call_no_message_requested_is_placed_by_its_step() -> None:
    """Without ``request_turn`` the call stands where its step index puts it."""
    script: list[User | Say] = [
        user("Cancel ZFA04Y"),
        say("Cancel ZFA04Y?"),
        user("yes"),
        say(None, CANCEL),
    ]
    run = convo([*script, say("ok")])
    call = run.steps[2]
    assert isinstance(call, ToolCall)
    assert call.request_turn == 3
    call.request_turn = None
    assert judge_one(RULE, run, layer="policy", tools=AIRLINE).verdict == "pass"
    script[2] = user("hmm, let me think")
    run = convo([*script, say("ok")])
    run.steps[2].request_turn = None  # type: ignore[union-attr]
    assert codes(judge_one(RULE, run, layer="policy", tools=AIRLINE)) == [
        "F-POLICY-NO_CONFIRMATION"
    ]


def test_bad_patterns_and_tool_names_fail_at_load() -> None:
    """Patterns compile with RE2; tool names are checked against ``tools:``."""
    with pytest.raises(RulesError) as info:
        load_rules_text(rules_text({**RULE, "affirmative": "(yes"}, layer="policy", tools=AIRLINE))
    assert any("affirmative" in e for e in info.value.errors)
    with pytest.raises(RulesError) as info:
        load_rules_text(
            rules_text({"type": "user_confirmation", "tools": ["cancel_reservaton"]}, tools=AIRLINE)
        )
    assert any("did you mean 'cancel_reservation'" in e for e in info.value.errors)
    with pytest.raises(RulesError):
        load_rules_text(rules_text({"type": "user_confirmation"}, tools=AIRLINE))


def test_custom_patterns_replace_the_defaults() -> None:
    """A team's own wording for yes and no."""
    rule = {**RULE, "affirmative": "(?i)\\bjawohl\\b", "negative": "(?i)\\bnein\\b"}
    base = [user("Storno ZFA04Y"), say("Storno ZFA04Y?")]
    tail = [say(None, CANCEL), say("ok")]
    assert _judge(rule, [*base, user("Jawohl"), *tail]).verdict == "pass"
    assert codes(_judge(rule, [*base, user("Nein"), *tail])) == ["F-POLICY-CONFIRMATION_DENIED"]
    assert codes(_judge(rule, [*base, user("yes"), *tail])) == ["F-POLICY-NO_CONFIRMATION"]


FOLLOW_UP: list[User | Say] = [
    user("Change ZFA04Y to the nonstop."),
    say("I'll move ZFA04Y to HAT266 for $146. Shall I proceed?"),
    user("Yes, please proceed."),
    say("Which card should pay the difference?"),
    user("The credit card on file."),
    say(None, CANCEL),
    say("Done."),
]


def test_reply_last_reads_only_the_last_user_turn() -> None:
    """The default: an answer to a follow-up question is not the yes."""
    v = _judge(RULE, FOLLOW_UP)
    assert codes(v) == ["F-POLICY-NO_CONFIRMATION"]
    assert "The credit card on file." in v.primary.explanation


def test_reply_latest_finds_the_yes_before_a_follow_up_answer() -> None:
    """``reply: latest``: the yes stands, and the proposal it answered is the one judged."""
    rule = {**RULE, "reply": "latest", "mention_arguments": ["reservation_id"]}
    assert _judge(rule, FOLLOW_UP).verdict == "pass"
    # a negative after the yes means the yes can no longer be relied on
    changed = [*FOLLOW_UP]
    changed[4] = user("Hmm, wait. The card I guess.")
    assert codes(_judge(rule, changed)) == ["F-POLICY-CONFIRMATION_DENIED"]
    asked = [
        *FOLLOW_UP[:4],
        user("Wait, which cards do I have?"),
        say("A Visa and an Amex."),
        user("The Visa."),
        *FOLLOW_UP[5:],
    ]
    v = _judge(rule, asked)
    assert codes(v) == ["F-POLICY-NO_CONFIRMATION"]
    assert "The Visa." in v.primary.explanation


def test_reply_latest_window_writes_in_a_row_and_after_the_user_spoke() -> None:
    """One yes covers writes in a row; once the user spoke again, a new yes is needed."""
    rule = {**RULE, "reply": "latest"}
    other = tool("cancel_reservation", {"reservation_id": "XYZ123"}, {"status": "cancelled"})
    both = [
        user("Cancel ZFA04Y and XYZ123."),
        say("Cancel both ZFA04Y and XYZ123?"),
        user("Yes."),
        say(None, CANCEL),
        say(None, other),
        say("Both cancelled."),
    ]
    assert _judge(rule, both).verdict == "pass"
    later = [*both[:4], say("Cancelled ZFA04Y. Anything else?"), user("Also XYZ123 then.")]
    v = _judge(rule, [*later, say(None, other), say("Done.")])
    assert codes(v) == ["F-POLICY-NO_CONFIRMATION"]
    assert v.primary.span_ids == (span(5),)  # the second cancel, not the first
    # a failed attempt does not use up the yes: its retry rests on it
    failed = tool("cancel_reservation", {"reservation_id": "ZFA04Y"}, None, status="error")
    retry = [*both[:3], say(None, failed), say(None, CANCEL), say("Cancelled.")]
    assert _judge(rule, retry).verdict == "pass"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes, I'd like to proceed with the change, please.", "yes"),
        ("Okay, let's proceed with changing the flight to HAT266.", "yes"),
        ("Everything looks good! Use the certificate.", "yes"),
        ("Thanks, no.", "no"),
        ("Actually, no.", "no"),
        ("I do not want to cancel it.", "no"),
        ("Please don't cancel.", "no"),
        # a later sentence's yes settles ("no" answered "anything else?"); within one
        # sentence the first answer stands
        ("No, that's all. Please go ahead.", "yes"),
        ("Not yet, yes later.", "no"),
        # statements that only contain the words are not answers
        ("My user ID is amelia. Unfortunately, I don't have the reservation IDs.", None),
        ("No extra baggage needed, and no travel insurance, thanks.", None),
        ("I'm not sure which card.", None),
        ("How can we proceed?", None),
        ("I would like to use the credit card that's already on file.", None),
    ],
)
def test_default_answers_read_answer_words_where_answers_stand(
    text: str, expected: str | None
) -> None:
    """Taken from real tau-bench user turns: "no" and "don't" said in passing don't refuse,
    "sure" inside "not sure" doesn't confirm."""
    from tracejudge.engine.checks.conversation import (
        DEFAULT_AFFIRMATIVE,
        DEFAULT_NEGATIVE,
        UserConfirmation,
    )
    from tracejudge.engine.compile import Compiler

    c = Compiler()
    yes = c.regex("a", DEFAULT_AFFIRMATIVE)
    no = c.regex("n", DEFAULT_NEGATIVE)
    assert yes is not None
    assert no is not None
    assert UserConfirmation(frozenset(), None, yes, no, [], False).answer(text) == expected


def _change_flights(proposal: str) -> Any:
    looked_up = tool(
        "get_reservation_details",
        {"reservation_id": "ZFA04Y"},
        {
            "reservation_id": "ZFA04Y",
            "flights": [{"flight_number": "HAT001"}, {"flight_number": "HAT112"}],
        },
    )
    change = tool(
        "update_reservation_flights",
        {
            "reservation_id": "ZFA04Y",
            "flights": [{"flight_number": "HAT266"}, {"flight_number": "HAT112"}],
        },
        {"status": "ok"},
    )
    rule = {
        "type": "user_confirmation",
        "tools": ["update_reservation_flights"],
        "mention_arguments": ["reservation_id", "flights[*].flight_number"],
    }
    return _judge(
        rule,
        [
            user("Change my outbound flight on ZFA04Y."),
            say(None, looked_up),
            say(proposal),
            user("Yes, go ahead."),
            say(None, change),
        ],
    )


def test_mention_arguments_skips_what_the_change_keeps() -> None:
    """ "List the action details" asks for what changes: a segment the update keeps, as the
    reservation's lookup returned it, need not be restated; the new one must be, and so
    must the identifying argument (it selects the state, it is not read from it)."""
    assert _change_flights("Switch ZFA04Y's outbound to HAT266? (yes/no)").verdict == "pass"
    v = _change_flights("Switch ZFA04Y's outbound to the 9 am flight? (yes/no)")
    assert codes(v) == ["F-POLICY-UNCONFIRMED_DETAILS"]
    assert "HAT266" in v.primary.explanation
    v = _change_flights("Switch the outbound to HAT266? (yes/no)")
    assert codes(v) == ["F-POLICY-UNCONFIRMED_DETAILS"]
    assert "ZFA04Y" in v.primary.explanation


def test_a_yes_to_a_message_that_asks_nothing_confirms_nothing() -> None:
    """ "Great! Could you also ..." after "It has been upgraded." is a new request, not an
    answer (tau-bench run 14-1: a baggage update confirmed only by the user's "Great!")."""
    v = _cancel_after("Great, go ahead.", proposal="I can cancel ZFA04Y. Please confirm.")
    assert v.verdict == "pass"  # a request to confirm asks, without a question mark
    v = _cancel_after("Great! Could you also cancel it?", proposal="Your flight was upgraded.")
    assert codes(v) == ["F-POLICY-NO_CONFIRMATION"]
    assert "answers no proposal" in v.primary.explanation
    assert v.primary.span_ids == (span(4),)


def test_the_proposal_pattern_is_configurable() -> None:
    """``proposal:`` replaces what counts as asking."""
    check = {**RULE, "proposal": "(?i)shall i"}
    script = [
        user("Please cancel my trip ZFA04Y."),
        say(None, DETAILS),
        say("Cancel reservation ZFA04Y?"),
        user("Yes."),
        say(None, CANCEL),
    ]
    assert codes(_judge(check, script)) == ["F-POLICY-NO_CONFIRMATION"]
    script[2] = say("Shall I cancel reservation ZFA04Y")
    assert _judge(check, script).verdict == "pass"


def test_a_detail_the_user_names_in_the_yes_is_confirmed() -> None:
    """ "Yes, and cancel 59XX6W too": the user's own words name what they confirm (tau-bench
    run 34-3); a detail neither side named is still unconfirmed."""
    check = {**RULE, "mention_arguments": ["reservation_id"]}
    other = tool("cancel_reservation", {"reservation_id": "59XX6W"}, {"status": "cancelled"})
    script = [
        user("Please cancel my trips."),
        say("Shall I cancel reservation ZFA04Y?"),
        user("Yes, and cancel 59XX6W too."),
        say(None, CANCEL),
        say(None, other),
    ]
    assert _judge(check, script).verdict == "pass"
    script[2] = user("Yes, and the other one too.")
    v = _judge(check, script)
    assert codes(v) == ["F-POLICY-UNCONFIRMED_DETAILS"]
    assert "59XX6W" in v.primary.explanation


def test_details_may_be_listed_across_proposals_each_agreed_to() -> None:
    """Issue 19 §2: "Return the kettle from #W1 - yes - the refund goes to PayPal, proceed?
    - yes" lists the details over two proposals, each answered yes (the shape of tau2
    retail run 26/chloe-gpt4o-1). A detail from an earlier proposal the user did not say
    yes to is not confirmed."""
    rule = {**RULE, "mention_arguments": ["reservation_id"]}
    script = [
        user("I need to cancel a trip."),
        say("I found reservation ZFA04Y. Would you like me to cancel it?"),
        user("Yes, that's the one."),
        say("The refund goes to your original card in 5-7 days. Please confirm to proceed."),
        user("Yes, please proceed."),
        say(None, CANCEL),
        say("Done."),
    ]
    assert _judge(rule, script).verdict == "pass"
    script[2] = user("Hmm, what would the refund be?")
    v = _judge(rule, script)
    assert codes(v) == ["F-POLICY-UNCONFIRMED_DETAILS"]
    assert "(turn 3)" in v.primary.explanation


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("2024-05-04", "your flight on May 4 is"),
        ("2024-05-04", "on the 4th of May"),
        ("2024-05-04", "departing 05/04/2024"),
        ("basic_economy", "in basic economy"),
        ("round_trip", "a round-trip ticket"),
        (3, "add three checked bags"),
    ],
)
def test_details_as_people_write_them(value: Any, text: str) -> None:
    """Issue 19 §2: dates in words, identifiers with spaces, counts in words."""
    assert mentions(text.casefold(), value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("2024-05-04", "on May 14"),  # another day
        ("2024-05-04", "on June 4"),  # another month
        (1, "one moment please"),  # "one" is too common to be the count
        ("round_trip", "a one-way trip"),
    ],
)
def test_other_details_are_not_taken_for_them(value: Any, text: str) -> None:
    assert not mentions(text.casefold(), value)


PROFILE = tool(
    "get_user_details",
    {"user_id": "mia_kim_4397"},
    {
        "payment_methods": {
            "credit_card_4421486": {
                "source": "credit_card",
                "brand": "visa",
                "last_four": "7447",
                "id": "credit_card_4421486",
            },
            "gift_card_7359776": {"source": "gift_card", "amount": 39, "id": "gift_card_7359776"},
        }
    },
)


def test_a_payment_id_said_by_a_record_field_that_tells_it_apart() -> None:
    """Issue 19 §2: ``credit_card_4421486`` said as "the Visa ending 7447", resolved through
    the profile lookup that holds both. A field shared by many records (the brand alone)
    does not name it."""
    change = tool(
        "update_reservation_flights",
        {"reservation_id": "ZFA04Y", "payment_id": "credit_card_4421486"},
        {"status": "ok"},
    )
    rule = {**RULE, "tools": ["update_reservation_flights"], "mention_arguments": ["payment_id"]}
    script = [
        user("Change ZFA04Y to the later flight."),
        say(None, PROFILE),
        say("I'll change ZFA04Y and charge the Visa ending 7447. Proceed?"),
        user("Yes."),
        say(None, change),
        say("Done."),
    ]
    assert _judge(rule, script).verdict == "pass"
    script[2] = say("I'll change ZFA04Y and charge your Visa. Proceed?")
    assert codes(_judge(rule, script)) == ["F-POLICY-UNCONFIRMED_DETAILS"]


def test_mention_results_asks_that_what_the_call_charged_was_quoted() -> None:
    """Issue 19 §2 (amounts): adding bags charged $100 (the new entry of the payment
    history); the proposal must have quoted it. The booking's original payment, which the
    lookup already showed, is not what this call did. (tau-bench airline run 14-2 added two
    bags for $100 with no price said.)"""
    before = {"reservation_id": "YAX4DR", "payment_history": [{"amount": 498}]}
    lookup = tool("get_reservation_details", {"reservation_id": "YAX4DR"}, before)
    bags = tool(
        "update_reservation_baggages",
        {"reservation_id": "YAX4DR", "total_baggages": 2},
        {"reservation_id": "YAX4DR", "payment_history": [{"amount": 498}, {"amount": 100}]},
    )
    rule = {
        "type": "user_confirmation",
        "tools": ["update_reservation_baggages"],
        "mention_arguments": ["total_baggages"],
        "mention_results": ["payment_history[*].amount"],
    }
    script = [
        user("Add two bags to YAX4DR."),
        say(None, lookup),
        say("Adding two checked bags to YAX4DR costs $100. Shall I proceed?"),
        user("Yes."),
        say(None, bags),
        say("Done."),
    ]
    assert _judge(rule, script).verdict == "pass"
    script[2] = say("Adding two checked bags to YAX4DR. Shall I proceed?")
    v = _judge(rule, script)
    assert codes(v) == ["F-POLICY-UNCONFIRMED_DETAILS"]
    assert "payment_history[*].amount=100" in v.primary.explanation


def test_mention_results_reads_a_refund_by_its_size() -> None:
    refund = tool(
        "cancel_reservation",
        {"reservation_id": "ZFA04Y"},
        {"payment_history": [{"amount": 2787}, {"amount": -2492}]},
    )
    rule = {**RULE, "mention_results": ["payment_history[*].amount"]}
    proposal = "Cancelling ZFA04Y refunds $2,492 (of $2,787) to your card. Proceed?"
    script = [user("Cancel ZFA04Y."), say(proposal), user("Yes."), say(None, refund), say("Done.")]
    assert _judge(rule, script).verdict == "pass"
