"""Completion claims on real shapes of text that were misread (issue 19, section 1).

Invented sentences in the shape of real agent messages: procedures, conditions and dated
facts are no claim of what the agent did; a generic verb's claim needs the tool its
object names, or is undecided.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.conversation_runs import convo, say, user
from tests.engine.engine_runs import codes, judge_one, span, tool
from tests.engine.test_message_claims import _asserted

AIRLINE: dict[str, Any] = {
    "get_reservation_details": {"kind": "lookup"},
    "update_reservation_baggages": {"kind": "mutate"},
    "update_reservation_passengers": {"kind": "mutate"},
    "book_reservation": {"kind": "mutate"},
    "cancel_reservation": {"kind": "mutate"},
}
ADDED = {
    "type": "completion_claims",
    "map": {
        "added": [
            "update_reservation_baggages",
            "update_reservation_passengers",
            "book_reservation",
        ]
    },
}
PASSENGERS = tool(
    "update_reservation_passengers",
    {"reservation_id": "4WQ150", "passengers": [{"first_name": "Noah", "last_name": "Lee"}]},
    {"reservation_id": "4WQ150"},
)
BAGS = tool(
    "update_reservation_baggages",
    {"reservation_id": "4WQ150", "total_baggages": 3, "nonfree_baggages": 1},
    {"reservation_id": "4WQ150"},
)


@pytest.mark.parametrize(
    ("detector", "sentence"),
    [
        ("refunded", "Ensure the refund is processed to the original payment method."),
        ("refunded", "Make sure the refund is issued to the gift card."),
        ("refunded", "The refund is issued after the returned item is received."),
        ("refunded", "Refunds are processed within 5-7 business days."),
        ("booked", "Unfortunately, the booking was made on May 4, outside the 24-hour window."),
        ("cancelled", "The cancellation was completed 3 days ago, so it cannot be changed."),
    ],
)
def test_procedures_conditions_and_dated_facts_are_no_claims(detector: str, sentence: str) -> None:
    """Before: each fired as a completion claim with no call behind it."""
    assert _asserted(detector, sentence) is False


@pytest.mark.parametrize(
    ("detector", "sentence"),
    [
        ("refunded", "Your refund is processed."),
        ("refunded", "The refund has been issued after the item was received."),
        ("booked", "Your booking was made."),
        ("cancelled", "The cancellation is now complete."),
    ],
)
def test_the_same_verbs_as_claims_still_count(detector: str, sentence: str) -> None:
    """A present or perfect claim without a condition or another time is still a claim."""
    assert _asserted(detector, sentence) is True


def _after(write: Any, message: str) -> Any:
    run = convo(
        [
            user("Add three bags to 4WQ150, please."),
            say("Add 3 bags (1 paid) to 4WQ150?"),
            user("Yes."),
            say(None, write),
            say(message),
        ]
    )
    return judge_one(ADDED, run, layer="outcome", tools=AIRLINE)


def test_a_generic_claim_is_backed_by_the_tool_its_object_names() -> None:
    """Before: "three bags have been added" passed on a passenger update (any mapped
    write)."""
    wrong = _after(PASSENGERS, "Three bags have been added to your reservation.")
    assert codes(wrong) == ["F-OUTPUT-UNSUPPORTED_CLAIM"]
    assert "update_reservation_baggages" in wrong.primary.explanation
    assert wrong.primary.span_ids == (span(3),)  # the message that claims it
    assert _after(BAGS, "Three bags have been added to your reservation.").verdict == "pass"


def test_a_generic_claim_naming_no_object_is_undecided() -> None:
    """ "It has been added" names nothing: some mapped write ran, but which one backs it
    cannot be read. Undecided, citing the sentence; with no write at all, a failure."""
    v = _after(BAGS, "Everything has been added. Anything else?")
    assert v.verdict == "warn"
    assert codes(v) == ["F-UNDECIDED-CLAIM"]
    assert "Everything has been added." in v.primary.explanation
    assert v.findings[0].undecided
    lookup = tool("get_reservation_details", {"reservation_id": "4WQ150"}, {})
    assert codes(_after(lookup, "Everything has been added.")) == ["F-OUTPUT-UNSUPPORTED_CLAIM"]
