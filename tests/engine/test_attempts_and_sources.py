"""``attempts: all | successful`` on the checks that judge calls; bindings with several
sources, from results or from earlier calls' arguments."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.engine_runs import codes, judge_one, make_run, rules_text, span, tool
from tracejudge.engine import RulesError, load_rules_text
from tracejudge.model.run import Step

ORDERS = {"orders": [{"id": "B-200"}]}
LOOKUP = tool("lookup_order", {"customer_id": "u1"}, ORDERS)


def _failed(name: str, args: Any) -> Any:
    return tool(name, args, None, status="error")


# check, the run's steps, the code the default gives (None: pass), and what
# the other ``attempts`` value gives
CASES: list[tuple[str, dict[str, Any], list[Step], str | None, str, str | None]] = [
    (
        "entity_binding",
        {"type": "entity_binding", "tool": "refund_api.create", "argument": "order_id"},
        [LOOKUP, _failed("refund_api.create", {"order_id": "A-1"})],
        "F-ACTION-ARG-ENTITY_BINDING",
        "successful",
        None,
    ),
    (
        "precedence",
        {"type": "precedence", "before": "check_policy", "after": "refund_api.create"},
        [_failed("refund_api.create", {"order_id": "B-200"})],
        "F-ACTION-ORDER",
        "successful",
        None,
    ),
    (
        "step_pattern",
        {"type": "step_pattern", "steps": [{"kind": "lookup"}]},
        [_failed("refund_api.create", {}), LOOKUP],
        "F-ACTION-ORDER",
        "successful",
        None,
    ),
    (
        "forbidden_steps",
        {"type": "forbidden_steps", "tools": ["delete_account"]},
        [_failed("delete_account", {})],
        "F-ACTION-FORBIDDEN_STEP",
        "successful",
        None,
    ),
    (
        "reference",
        {"type": "reference", "mode": "strict", "args_mode": "ignore",
         "calls": [{"tool": "send_email"}]},
        [_failed("send_email", {}), tool("send_email", {})],
        "F-ACTION-REFERENCE_MISMATCH",
        "successful",
        None,
    ),
    (
        "no_duplicate_side_effect",
        {"type": "no_duplicate_side_effect", "tools": ["send_email"]},
        [_failed("send_email", {"to": "u1"}), tool("send_email", {"to": "u1"})],
        None,
        "all",
        "F-ACTION-DUPLICATE_SIDE_EFFECT",
    ),
    (
        "tool_access",
        {"type": "tool_access", "deny": ["delete_account"]},
        [_failed("delete_account", {})],
        "F-POLICY-UNAUTHORIZED_TOOL",
        "successful",
        None,
    ),
    (
        "approval",
        {"type": "approval", "tools": ["refund_api.create"]},
        [_failed("refund_api.create", {})],
        "F-POLICY-MISSING_APPROVAL",
        "successful",
        None,
    ),
    (
        "max_calls",
        {"type": "max_calls", "limits": {"refund_api.create": 1}},
        [_failed("refund_api.create", {}), tool("refund_api.create", {})],
        "F-POLICY-MAX_CALLS",
        "successful",
        None,
    ),
    (
        "forbidden_arguments",
        {"type": "forbidden_arguments", "tool": "refund_api.create", "argument": "order_id",
         "pattern": "^TEST-"},
        [_failed("refund_api.create", {"order_id": "TEST-1"})],
        "F-POLICY-FORBIDDEN_ARGUMENT",
        "successful",
        None,
    ),
    (
        "identity_scope",
        {"type": "identity_scope", "tool": "lookup_order", "argument": "customer_id",
         "equals": "user_id"},
        [_failed("lookup_order", {"customer_id": "u2"})],
        "F-POLICY-IDENTITY_SCOPE",
        "successful",
        None,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("check", "steps", "default", "other", "then"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_attempts(
    check: dict[str, Any], steps: list[Step], default: str | None, other: str, then: str | None
) -> None:
    """The default keeps today's meaning; the other value changes only failed calls."""
    run = make_run(steps, user_id="u1")
    got = codes(judge_one(check, run))
    assert got == ([default] if default else [])
    got = codes(judge_one({**check, "attempts": other}, run))
    assert got == ([then] if then else [])


TOOLS: dict[str, Any] = {
    "get_user_details": {"kind": "lookup"},
    "get_reservation_details": {"kind": "lookup"},
    "book_reservation": {"kind": "mutate"},
    "update_reservation_flights": {"kind": "mutate"},
}
USER = tool(
    "get_user_details",
    {"user_id": "mia_1"},
    {"payment_methods": {"credit_card_1": {}, "gift_card_2": {}}, "reservations": ["ZFA04Y"]},
)
SEVERAL: dict[str, Any] = {
    "type": "entity_binding",
    "tool": "update_reservation_flights",
    "argument": "payment_id",
    "source": [
        {"tool": "get_user_details", "path": "keys(payment_methods)"},
        {"tool": "get_reservation_details", "path": "payment_history[*].payment_id"},
        {"tool": "book_reservation", "path": "payment_methods[*].payment_id", "from": "arguments"},
    ],
}


def _update(payment: str) -> Any:
    return tool("update_reservation_flights", {"reservation_id": "ZFA04Y", "payment_id": payment})


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([USER, _update("gift_card_2")], []),
        (
            [
                tool("get_reservation_details", {}, {"payment_history": [{"payment_id": "pp_9"}]}),
                _update("pp_9"),
            ],
            [],
        ),
        (
            [
                tool("book_reservation", {"payment_methods": [{"payment_id": "cert_7"}]}, {}),
                _update("cert_7"),
            ],
            [],
        ),
        ([USER, _update("card_stolen")], ["F-ACTION-ARG-ENTITY_BINDING"]),
        ([_update("gift_card_2")], ["F-ACTION-ORDER"]),
        (
            [_failed("book_reservation", {"payment_methods": [{"payment_id": "c"}]}), _update("c")],
            ["F-ACTION-ORDER"],
        ),
    ],
    ids=["profile", "reservation", "earlier-arguments", "unknown", "no-source", "failed-source"],
)
def test_several_sources_from_results_and_arguments(steps: list[Step], expected: list[str]) -> None:
    """Any listed source backs the value; a failed source call backs nothing."""
    assert codes(judge_one(SEVERAL, make_run(steps), tools=TOOLS)) == expected


def test_several_sources_explain_each_and_missing_evidence() -> None:
    """The explanation names every source; a source read but not captured is evidence."""
    v = judge_one(SEVERAL, make_run([USER, _update("x")]), tools=TOOLS)
    expl = v.primary.explanation
    assert "get_user_details at keys(payment_methods)" in expl
    assert "book_reservation arguments at payment_methods[*].payment_id" in expl
    blind = tool("get_user_details", {"user_id": "mia_1"}, None)
    v = judge_one(SEVERAL, make_run([blind, _update("x")]), tools=TOOLS)
    assert codes(v) == ["F-EVIDENCE-RESULT_MISSING"]
    assert v.primary.span_ids == (span(1),)


def test_precedence_binds_to_the_earlier_calls_arguments() -> None:
    """``bind.before`` reads ``{args, result}``: the order id the policy check was asked about."""
    check = {
        "type": "precedence",
        "before": "check_policy",
        "after": "refund_api.create",
        "bind": {"after": "args.order_id", "before": "args.order_id"},
    }
    policy = tool("check_policy", {"order_id": "B-200"}, {"approved": True})
    good = make_run([policy, tool("refund_api.create", {"order_id": "B-200"})])
    assert judge_one(check, good).verdict == "pass"
    bad = make_run([policy, tool("refund_api.create", {"order_id": "A-100"})])
    assert codes(judge_one(check, bad)) == ["F-ACTION-ARG-ENTITY_BINDING"]
    # the result path still reads results, and an uncaptured result is still evidence
    by_result = {**check, "bind": {"after": "args.order_id", "before": "result.order_id"}}
    blind = tool("check_policy", {"order_id": "B-200"}, None)
    run = make_run([blind, tool("refund_api.create", {"order_id": "B-200"})])
    assert codes(judge_one(by_result, run)) == ["F-EVIDENCE-RESULT_MISSING"]
    # an argument path on a call whose arguments were captured needs no result
    run = make_run([blind, tool("refund_api.create", {"order_id": "B-200"})])
    assert judge_one(check, run).verdict == "pass"


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ([{"tool": "get_user_details"}], "declares no entities"),
        ([{"tool": "book_reservation", "from": "arguments"}], "from: arguments needs a path"),
        ([{"tool": "get_user_detail", "path": "x"}], "did you mean 'get_user_details'"),
        ({"path": "x"}, "a path needs a tool"),
    ],
)
def test_bad_sources_fail_at_load(source: Any, needle: str) -> None:
    """Every source is checked: paths, entity declarations, tool names."""
    check = {**SEVERAL, "source": source}
    with pytest.raises(RulesError) as info:
        load_rules_text(rules_text(check, tools=TOOLS))
    assert any(needle in e for e in info.value.errors), info.value.errors


OWNED: dict[str, Any] = {
    "type": "entity_binding",
    "tool": "cancel_reservation",
    "argument": "reservation_id",
    "source": [
        {"tool": "get_user_details", "path": "reservations", "owner": {"path": "args.user_id"}},
        {
            "tool": "get_reservation_details",
            "path": "reservation_id",
            "owner": {"path": "result.user_id", "equals": "user_id"},
        },
    ],
}
OWNED_TOOLS: dict[str, Any] = {
    "get_user_details": {"kind": "lookup"},
    "get_reservation_details": {"kind": "lookup"},
    "cancel_reservation": {"kind": "mutate"},
}
CANCEL = tool("cancel_reservation", {"reservation_id": "ZFA04Y"}, {"status": "cancelled"})


def _reservation(owner: str) -> Step:
    return tool(
        "get_reservation_details",
        {"reservation_id": "ZFA04Y"},
        {"reservation_id": "ZFA04Y", "user_id": owner},
    )


@pytest.mark.parametrize(
    ("lookup", "expected"),
    [
        (_reservation("mia_1"), []),
        (tool("get_user_details", {"user_id": "mia_1"}, {"reservations": ["ZFA04Y"]}), []),
        (_reservation("raj_7"), ["F-ACTION-ARG-ENTITY_BINDING"]),
        (
            tool("get_user_details", {"user_id": "raj_7"}, {"reservations": ["ZFA04Y"]}),
            ["F-ACTION-ARG-ENTITY_BINDING"],
        ),
    ],
    ids=["details-name-the-user", "profile-lists-it", "another-users", "another-profile"],
)
def test_an_owner_test_admits_only_the_run_users_entities(
    lookup: Step, expected: list[str]
) -> None:
    """A reservation is the user's when their profile lists it or its details name them;
    a lookup of somebody else's records backs nothing (the tau-bench false alarms of runs
    20-0..3 came from asking for the profile alone)."""
    v = judge_one(OWNED, make_run([lookup, CANCEL], user_id="mia_1"), tools=OWNED_TOOLS)
    assert codes(v) == expected
    if expected:
        assert "calls about another user_id do not count" in v.primary.explanation
        assert v.primary.span_ids == (span(1),)


def test_an_owner_test_without_the_runs_identity_is_insufficient_evidence() -> None:
    """With no user id on the trace nobody can tell whose reservation it was: evidence, not
    a pass and not a policy failure."""
    v = judge_one(OWNED, make_run([_reservation("mia_1"), CANCEL]), tools=OWNED_TOOLS)
    assert codes(v) == ["F-EVIDENCE-NO_IDENTITY"]
    assert v.outcomes[0].result == "insufficient_evidence"


def test_an_owner_test_needs_a_path() -> None:
    """``owner`` without ``path`` is refused at load, naming the field."""
    bad = {**OWNED, "source": [{"tool": "get_user_details", "path": "reservations", "owner": {}}]}
    with pytest.raises(RulesError) as info:
        load_rules_text(rules_text(bad, tools=OWNED_TOOLS))
    assert any("owner" in e and "path" in e for e in info.value.errors), info.value.errors


RETAIL_TOOLS: dict[str, Any] = {
    "get_order_details": {"kind": "lookup"},
    "return_delivered_order_items": {"kind": "mutate"},
    "exchange_delivered_order_items": {"kind": "mutate"},
}
DELIVERED = {
    "type": "entity_binding",
    "tool": "exchange_delivered_order_items",
    "argument": "order_id",
    "source": {"tool": "get_order_details", "path": "[@][?status == 'delivered'].order_id"},
}


def _return_then_exchange() -> Any:
    order = {"order_id": "#W1", "status": "delivered"}
    return make_run(
        [
            tool("get_order_details", {"order_id": "#W1"}, order),
            tool(
                "return_delivered_order_items",
                {"order_id": "#W1", "item_ids": ["1"]},
                {"order_id": "#W1", "status": "return requested"},
            ),
            tool("exchange_delivered_order_items", {"order_id": "#W1"}, {"order_id": "#W1"}),
        ]
    )


def test_latest_by_judges_an_entity_on_its_state_before_the_call() -> None:
    """Issue 19 §2, "the latest state before this call": the lookup said delivered, then a
    return in the same run left the order "return requested"; an exchange after it acts on
    an order that is no longer delivered. Without ``latest_by`` the old lookup still
    counts."""
    run = _return_then_exchange()
    assert judge_one(DELIVERED, run, tools=RETAIL_TOOLS).verdict == "pass"
    v = judge_one({**DELIVERED, "latest_by": "order_id"}, run, tools=RETAIL_TOOLS)
    assert codes(v) == ["F-ACTION-ARG-ENTITY_BINDING"]
    assert v.primary.span_ids == (span(2),)
    assert "latest state before the call, as return_delivered_order_items" in v.primary.explanation


def test_latest_by_lets_a_later_lookup_restore_an_entity() -> None:
    """A later lookup showing the order delivered again counts (the latest state wins)."""
    steps = list(_return_then_exchange().steps)
    relook = tool(
        "get_order_details", {"order_id": "#W1"}, {"order_id": "#W1", "status": "delivered"}
    )
    run = make_run(
        [*steps[:2], relook, tool("exchange_delivered_order_items", {"order_id": "#W1"}, {})]
    )
    assert (
        judge_one({**DELIVERED, "latest_by": "order_id"}, run, tools=RETAIL_TOOLS).verdict == "pass"
    )
