"""``mention_arguments``: a value the change keeps is waived even when the call and the
lookup name it by different paths (issue 19 §2: ``address1`` vs ``address.address1``)."""

from __future__ import annotations

from typing import Any

from tests.engine.conversation_runs import Say, User, convo, say, user
from tests.engine.engine_runs import codes, judge_one, tool

RETAIL: dict[str, Any] = {
    "get_user_details": {"kind": "lookup"},
    "modify_user_address": {"kind": "mutate"},
}
ADDRESS = {
    "address1": "445 Maple Drive",
    "address2": "Suite 394",
    "city": "Fort Worth",
    "country": "USA",
    "state": "TX",
    "zip": "76165",
}
FLAT = ["address1", "address2", "city", "country", "state", "zip"]
NESTED = [f"address.{k}" for k in FLAT]


def _run(
    mention: list[str], arguments: dict[str, Any], user_record: dict[str, Any], proposal: str
) -> Any:
    check = {"type": "user_confirmation", "tools": ["modify_user_address"]}
    check["mention_arguments"] = mention
    lookup = tool("get_user_details", {"user_id": "yusuf_rossi_9620"}, user_record)
    change = tool("modify_user_address", {"user_id": "yusuf_rossi_9620", **arguments}, {})
    script: list[User | Say] = [
        user("I moved; please update my address. My id is yusuf_rossi_9620."),
        say(None, lookup),
        say(proposal),
        user("Yes."),
        say(None, change),
    ]
    return judge_one(check, convo(script), layer="policy", tools=RETAIL)


NEW_STREET = "To confirm for yusuf_rossi_9620: address1 becomes 12 Oak Lane. Proceed (yes/no)?"


def test_a_flat_argument_kept_from_a_nested_result_is_waived() -> None:
    """Only the street changes: the unchanged city, zip... were returned under ``address``
    but passed flat; they need not be restated. The new street still must be."""
    new = {**ADDRESS, "address1": "12 Oak Lane"}
    record = {"user_id": "yusuf_rossi_9620", "address": ADDRESS}
    assert _run(FLAT, new, record, NEW_STREET).verdict == "pass"
    v = _run(FLAT, new, record, "Shall I update yusuf_rossi_9620's street (yes/no)?")
    assert codes(v) == ["F-POLICY-UNCONFIRMED_DETAILS"]
    assert "12 Oak Lane" in v.primary.explanation


def test_a_nested_argument_kept_from_a_flat_result_is_waived() -> None:
    """The reverse: the call nests the address, the lookup returned it flat."""
    new = {"address": {**ADDRESS, "address1": "12 Oak Lane"}}
    record = {"user_id": "yusuf_rossi_9620", **ADDRESS}
    assert _run(NESTED, new, record, NEW_STREET).verdict == "pass"
    assert _run(["address"], new, record, NEW_STREET).verdict == "pass"


def test_two_candidates_with_different_values_waive_nothing() -> None:
    """``address.city`` and ``billing.city`` both end in ``city``: with different values
    the call's flat ``city`` could be either, so it is not waived."""
    new = {**ADDRESS, "address1": "12 Oak Lane"}
    billing = {**ADDRESS, "city": "Dallas"}
    record = {"user_id": "yusuf_rossi_9620", "address": ADDRESS, "billing": billing}
    v = _run(FLAT, new, record, NEW_STREET)
    assert codes(v) == ["F-POLICY-UNCONFIRMED_DETAILS"]
    assert "Fort Worth" in v.primary.explanation


def test_a_same_name_under_an_unrelated_path_waives_nothing() -> None:
    """A leaf of the same name whose path is not a suffix of the call's is another value:
    the call's ``address.address2`` is not the lookup's ``billing.address2``."""
    new = {"address": {**ADDRESS, "address1": "12 Oak Lane"}}
    record = {"user_id": "yusuf_rossi_9620", "billing": ADDRESS}
    v = _run(NESTED, new, record, NEW_STREET)
    assert codes(v) == ["F-POLICY-UNCONFIRMED_DETAILS"]
    assert "Suite 394" in v.primary.explanation
