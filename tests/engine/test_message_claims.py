"""Claims in every assistant message: sentences, negations, calls before, entities."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.conversation_runs import convo, say, user
from tests.engine.engine_runs import FINAL, codes, judge_one, make_run, rules_text, span, tool
from tracejudge.engine import RulesError, load_rules_text
from tracejudge.engine.checks.claims import DETECTORS, NEGATIONS, MessageClaims
from tracejudge.engine.compile import Compiler
from tracejudge.engine.sentences import sentences

AIRLINE: dict[str, Any] = {
    "get_reservation_details": {"kind": "lookup"},
    "cancel_reservation": {"kind": "mutate"},
    "book_reservation": {"kind": "mutate"},
    "update_reservation_flights": {"kind": "mutate"},
}
CANCEL = tool("cancel_reservation", {"reservation_id": "ZFA04Y"}, {"status": "cancelled"})
CANCELLED = {"type": "completion_claims", "map": {"cancelled": ["cancel_reservation"]}}


def _judge(check: dict[str, Any], script: list[Any], **kw: Any) -> Any:
    return judge_one(check, convo(script, **kw), layer="outcome", tools=AIRLINE)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Your refund of $84.00 has been issued. Order ord_B1.002 is closed!",
            ["Your refund of $84.00 has been issued.", "Order ord_B1.002 is closed!"],
        ),
        (
            "Hi Mr. Smith. I checked e.g. the flights. Flight No. 5 leaves at 9 a.m. today.",
            [
                "Hi Mr. Smith.",
                "I checked e.g. the flights.",
                "Flight No. 5 leaves at 9 a.m. today.",
            ],
        ),
        (
            "**Done.** Details:\n\n- Reservation: ZFA04Y\n- Refund: $12.50\n1. First. Second?",
            ["**Done.**", "Details:", "Reservation: ZFA04Y", "Refund: $12.50", "First.", "Second?"],
        ),
        (
            "Visit example.com... Then call J. Smith.",
            ["Visit example.com...", "Then call J. Smith."],
        ),
        ("The answer is no. No. 5 is open.", ["The answer is no.", "No. 5 is open."]),
        ("", []),
        ("---\n**", []),
    ],
)
def test_sentence_splitter(text: str, expected: list[str]) -> None:
    """Decimals, ids, abbreviations, initials, bullets and markdown survive the split."""
    assert [text[a:b] for a, b in sentences(text)] == expected


def _asserted(detector: str, sentence: str) -> bool:
    c = Compiler()
    rx = c.regex("x", DETECTORS[detector], limit=5000)
    neg = c.regex("n", "(?i)(?:" + "|".join(f"(?:{x})" for x in NEGATIONS) + ")", limit=5000)
    assert rx is not None
    assert neg is not None
    check = MessageClaims([], neg, False)
    return any(check.asserted(sentence, a, b, rx) for a, b in sentences(sentence))


@pytest.mark.parametrize(
    ("detector", "sentence", "claim"),
    [
        ("cancelled", "Your reservation ZFA04Y has been cancelled.", True),
        ("cancelled", "I've cancelled your reservation.", True),
        ("cancelled", "I have successfully cancelled it.", True),
        ("cancelled", "The cancellation is complete.", True),
        ("cancelled", "Reservation ZFA04Y is now cancelled.", True),
        ("cancelled", "Your reservation could not be cancelled.", False),
        ("cancelled", "Your reservation hasn't been cancelled yet.", False),
        ("cancelled", "I will cancel it once you confirm.", False),
        ("cancelled", "Would you like me to have it cancelled?", False),
        ("cancelled", "Since your flight was cancelled by the airline, you get a refund.", False),
        ("cancelled", "Unfortunately, I was unable to cancel it.", False),
        ("cancelled", "If you confirm, it will have been cancelled.", False),
        ("cancelled", "I couldn't change the date, but I have cancelled the trip.", True),
        ("cancelled", "Shall I confirm that it has been cancelled?", False),
        ("refunded", "A refund of $84.00 has been issued to your card.", True),
        ("refunded", "I've issued a full refund to your card.", True),
        ("refunded", "You will be refunded within 5-7 days.", False),
        ("refunded", "The refund failed to go through.", False),
        ("booked", "Your new flight has been booked.", True),
        ("booked", "I can book it for you.", False),
        ("booked", "Your reservation HAT0A1 has been confirmed.", True),
        ("booked", "Your reservation cancellation is complete.", False),
        ("booked", "The cancellation of reservation XEHM4B has been completed.", False),
        ("booked", "Your reservation was created on May 10.", False),
        ("cancelled", "The cancellation of reservation XEHM4B has been completed.", True),
        ("updated", "All your reservations have been successfully downgraded to economy.", True),
        ("refunded", "Refund: $6,594 has been processed back to your credit card.", True),
        ("charged", "The additional charges have been applied to your card.", True),
        ("charged", "The payment of **$600** has been processed.", True),
        ("sent", "The $50 certificate has been successfully issued to your account.", True),
        ("sent", "I have issued a refund.", False),
        ("updated", "The change has been made to economy class.", True),
        ("cancelled", "Your reservation cancellation is complete.", True),
        ("refunded", "The refund for order #123 was processed.", True),
        ("updated", "I've changed your flight to HAT001.", True),
        ("updated", "Your reservation has been updated.", True),
        ("updated", "The change is not possible.", False),
        ("sent", "The confirmation email has been sent.", True),
        ("transferred", "You are now being transferred to a human agent.", True),
        ("transferred", "I'll transfer you to a human agent.", False),
        ("upgraded", "Your cabin has been upgraded to business.", True),
        ("added", "I have added two checked bags.", True),
        ("added", "Do you want bags added?", False),
    ],
)
def test_builtin_detectors_and_negations(detector: str, sentence: str, claim: bool) -> None:
    """What the detectors take for a completion claim, and what the negations rule out."""
    assert _asserted(detector, sentence) is claim


def test_a_claim_in_the_middle_needs_a_call_before_it() -> None:
    """The claim is judged where it was said; a call made afterwards does not back it."""
    early = [
        user("Cancel ZFA04Y."),
        say("Your reservation ZFA04Y has been cancelled. Anything else?"),
        user("Thanks"),
        say(None, CANCEL),
        say("Bye."),
    ]
    v = _judge(CANCELLED, early)
    assert codes(v) == ["F-OUTPUT-UNSUPPORTED_CLAIM"]
    assert v.primary.span_ids == (span(0),)  # the model call that said it
    assert v.primary.step_index == 0
    assert "one ran later, at step 2" in v.primary.explanation
    honest = [user("Cancel ZFA04Y."), say(None, CANCEL), say("It has been cancelled."), user("ok")]
    assert _judge(CANCELLED, honest).verdict == "pass"


def test_failed_calls_and_negated_sentences() -> None:
    """A failed cancel backs nothing; "could not be cancelled" claims nothing."""
    failed = tool("cancel_reservation", {"reservation_id": "ZFA04Y"}, None, status="error")
    v = _judge(CANCELLED, [user("Cancel"), say(None, failed), say("It has been cancelled.")])
    assert "attempted and failed" in v.primary.explanation
    sorry = [user("Cancel"), say(None, failed), say("Sorry, it could not be cancelled.")]
    assert _judge(CANCELLED, sorry).verdict == "pass"


def test_every_message_not_only_the_final_answer() -> None:
    """``messages: all`` (the default here) reads mid-run messages; ``final`` the answer."""
    script = [user("Cancel"), say("I've cancelled it."), user("Really?"), say("Anything else?")]
    assert codes(_judge(CANCELLED, script)) == ["F-OUTPUT-UNSUPPORTED_CLAIM"]
    assert _judge({**CANCELLED, "messages": "final"}, script).verdict == "pass"


def test_one_finding_per_message_and_detector() -> None:
    """Two unbacked messages: two findings, each citing its own model call."""
    check = {
        "type": "completion_claims",
        "map": {"cancelled": ["cancel_reservation"], "booked": ["book_reservation"]},
    }
    v = _judge(
        check,
        [
            user("Cancel and rebook"),
            say("I've cancelled it. It has been cancelled. Your new flight has been booked."),
            user("ok"),
            say("Your reservation has been cancelled."),
        ],
    )
    assert codes(v) == ["F-OUTPUT-UNSUPPORTED_CLAIM"] * 3
    assert sorted(f.span_ids[0] for f in v.findings) == [span(0), span(0), span(1)]


def test_runs_without_turns_fall_back_to_the_final_answer() -> None:
    """No captured messages: the final answer is the one message; none at all: evidence."""
    run = make_run([CANCEL], "Your reservation has been cancelled.")
    assert judge_one(CANCELLED, run, layer="outcome", tools=AIRLINE).verdict == "pass"
    run = make_run([], "Your reservation has been cancelled.")
    v = judge_one(CANCELLED, run, layer="outcome", tools=AIRLINE)
    assert codes(v) == ["F-OUTPUT-UNSUPPORTED_CLAIM"]
    assert v.primary.span_ids == (FINAL,)
    v = judge_one(CANCELLED, make_run([CANCEL], None), layer="outcome", tools=AIRLINE)
    assert codes(v) == ["F-EVIDENCE-NO_FINAL_ANSWER"]
    assert v.verdict == "warn"


ENTITY_CLAIM: dict[str, Any] = {
    "type": "claim_evidence",
    "claim": "(?i)reservation (?P<res>[A-Z0-9]{6}) has been cancell?ed",
    "tool": "cancel_reservation",
    "messages": "all",
    "entity": {"group": "res", "argument": "reservation_id"},
}


def test_claim_evidence_per_message_on_the_entity_it_names() -> None:
    """The claimed reservation must be the one the backing call cancelled."""
    right = [user("Cancel"), say(None, CANCEL), say("Reservation ZFA04Y has been cancelled.")]
    assert _judge(ENTITY_CLAIM, right).verdict == "pass"
    wrong = [user("Cancel"), say(None, CANCEL), say("Reservation ABC123 has been cancelled.")]
    v = _judge(ENTITY_CLAIM, wrong)
    assert codes(v) == ["F-OUTPUT-CLAIM_ENTITY_MISMATCH"]
    assert "'ZFA04Y'" in v.primary.explanation
    by_result = {**ENTITY_CLAIM, "entity": {"group": "res", "result": "reservation_id"}}
    returns = tool("cancel_reservation", {"id": "x"}, {"reservation_id": "ABC123"})
    said = [user("Cancel"), say(None, returns), say("Reservation ABC123 has been cancelled.")]
    assert _judge(by_result, said).verdict == "pass"
    blind = tool("cancel_reservation", {"id": "x"}, None)
    said = [user("Cancel"), say(None, blind), say("Reservation ABC123 has been cancelled.")]
    assert codes(_judge(by_result, said)) == ["F-EVIDENCE-RESULT_MISSING"]


def test_claim_evidence_without_messages_keeps_its_old_meaning() -> None:
    """Old rule files: the whole final answer, any successful call in the run."""
    legacy = {
        "type": "claim_evidence",
        "claim": "(?i)has been cancelled",
        "tool": "cancel_reservation",
    }
    # a negated claim still fires without ``messages``: that is what the rule meant
    run = make_run([], "It has been cancelled? No, it could not be.")
    assert codes(judge_one(legacy, run, layer="outcome", tools=AIRLINE)) == [
        "F-OUTPUT-UNSUPPORTED_CLAIM"
    ]
    per_message = {**legacy, "messages": "final"}
    assert judge_one(per_message, run, layer="outcome", tools=AIRLINE).verdict == "pass"


def test_custom_negations_replace_the_defaults() -> None:
    """``negations: []`` turns negation-awareness off; a custom list is used as given."""
    script = [user("Cancel"), say("It could not be cancelled, it has been cancelled later.")]
    assert _judge(CANCELLED, script).verdict == "fail"  # the second clause claims it
    script = [user("Cancel"), say("Maybe it has been cancelled.")]
    assert _judge(CANCELLED, script).verdict == "fail"
    assert _judge({**CANCELLED, "negations": ["\\bmaybe\\b"]}, script).verdict == "pass"
    script = [user("Cancel"), say("It will have been cancelled.")]
    assert _judge({**CANCELLED, "negations": []}, script).verdict == "fail"


@pytest.mark.parametrize(
    ("check", "needle"),
    [
        ({**ENTITY_CLAIM, "entity": {"group": "nope", "argument": "x"}}, "no group named"),
        ({**ENTITY_CLAIM, "messages": None}, "messages"),
        ({"type": "completion_claims", "map": {"canceled": ["cancel_reservation"]}}, "canceled"),
        ({"type": "completion_claims", "map": {"cancelled": ["cancel_reservaton"]}}, "mean"),
        ({**CANCELLED, "negations": ["(bad"]}, "negations[0]"),
    ],
)
def test_bad_claim_rules_fail_at_load(check: dict[str, Any], needle: str) -> None:
    """A group the regex lacks, an unknown detector or tool, a bad negation: load errors."""
    if check.get("messages", "") is None:
        check = {k: v for k, v in check.items() if k != "messages"}
    with pytest.raises(RulesError) as info:
        load_rules_text(rules_text(check, layer="outcome", tools=AIRLINE))
    assert any(needle in e for e in info.value.errors), info.value.errors
