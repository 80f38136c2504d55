"""Policy checks: tool access, approvals, call limits, arguments, sensitive data, identity."""

from __future__ import annotations

from tests.engine.engine_runs import ORDERS, ROOT, codes, judge_one, make_run, span, tool
from tracejudge.engine.checks.policy import luhn_ok

LOOKUP = tool("lookup_order", {"customer_id": "u1"}, ORDERS)
REFUND = tool("refund_api.create", {"order_id": "B-200", "amount": 40.0}, {"id": "re_1"})


def test_allowlist_and_denylist() -> None:
    """A tool outside the allowlist or on the denylist is unauthorized at its own span."""
    allow = {"type": "tool_access", "allow": ["lookup_order"]}
    v = judge_one(allow, make_run([LOOKUP, REFUND]), layer="policy")
    assert codes(v) == ["F-POLICY-UNAUTHORIZED_TOOL"]
    assert v.primary.span_ids == (span(1),)
    deny = {"type": "tool_access", "deny": ["refund_api.create"]}
    assert codes(judge_one(deny, make_run([REFUND]), layer="policy")) == [
        "F-POLICY-UNAUTHORIZED_TOOL"
    ]
    assert judge_one(deny, make_run([LOOKUP]), layer="policy").verdict == "pass"


def test_allowlist_per_agent_via_select() -> None:
    """Scoping by agent: another agent's run is not_applicable, not a pass or a fail."""
    allow = {"type": "tool_access", "allow": ["lookup_order"]}
    v = judge_one(
        allow,
        make_run([REFUND], agent_name="billing-agent"),
        layer="policy",
        select={"agent": "support-agent"},
    )
    assert v.verdict == "pass"
    assert v.outcomes[0].result == "not_applicable"
    assert v.layers["policy"] == "not_applicable"


def test_approval_attribute_or_prior_step() -> None:
    """Approval comes from the span attribute or an earlier successful approval step."""
    check = {"type": "approval", "tools": ["refund_api.create"]}
    approved = tool("refund_api.create", {"order_id": "B-200"}, {}, approval=True)
    assert judge_one(check, make_run([approved]), layer="policy").verdict == "pass"
    step = tool("request_approval", {"order_id": "B-200"}, {"approved": True})
    assert judge_one(check, make_run([step, REFUND]), layer="policy").verdict == "pass"
    v = judge_one(check, make_run([REFUND]), layer="policy")
    assert codes(v) == ["F-POLICY-MISSING_APPROVAL"]
    denied_step = tool("request_approval", {}, {"approved": False})
    assert judge_one(check, make_run([denied_step, REFUND]), layer="policy").verdict == "fail"
    denied_attr = tool("refund_api.create", {}, {}, approval=False)
    v = judge_one(check, make_run([step, denied_attr]), layer="policy")
    assert "denied" in v.primary.explanation


def test_max_calls_cites_the_call_over_the_limit() -> None:
    """The (N+1)-th call is the failing step."""
    check = {"type": "max_calls", "limits": {"lookup_order": 2}}
    v = judge_one(check, make_run([LOOKUP, LOOKUP, LOOKUP]), layer="policy")
    assert codes(v) == ["F-POLICY-MAX_CALLS"]
    assert v.primary.span_ids == (span(2),)
    assert judge_one(check, make_run([LOOKUP, LOOKUP]), layer="policy").verdict == "pass"


def test_forbidden_argument_values_and_pattern() -> None:
    """Listed values and pattern matches are forbidden; unparsed arguments are insufficient."""
    values = {
        "type": "forbidden_arguments",
        "tool": "refund_api.create",
        "argument": "order_id",
        "values": ["B-200"],
    }
    assert codes(judge_one(values, make_run([REFUND]), layer="policy")) == [
        "F-POLICY-FORBIDDEN_ARGUMENT"
    ]
    pattern = {
        "type": "forbidden_arguments",
        "tool": "refund_api.create",
        "argument": "order_id",
        "pattern": "^A-",
    }
    assert judge_one(pattern, make_run([REFUND]), layer="policy").verdict == "pass"
    raw = tool("refund_api.create", "B-200", None, args_json=False)
    assert codes(judge_one(pattern, make_run([raw]), layer="policy")) == [
        "F-EVIDENCE-ARGS_NOT_JSON"
    ]


def test_secret_detectors_withhold_the_value() -> None:
    """Secrets in arguments, results and the answer are found; explanations never echo them."""
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0"
    check = {"type": "sensitive_data"}
    leaky = tool("send_email", {"body": f"use key {key}"}, {"auth": "Bearer abcdefghijklmnop1234"})
    v = judge_one(check, make_run([leaky], "-----BEGIN RSA PRIVATE KEY----- ..."), layer="policy")
    assert codes(v).count("F-POLICY-SECRET_EXPOSURE") == 3
    assert all(key not in f.explanation for f in v.findings)
    assert v.primary.span_ids == (span(0),)


def test_card_numbers_need_luhn() -> None:
    """A 16-digit number is a card only when its Luhn checksum holds."""
    assert luhn_ok("4111 1111 1111 1111")
    assert not luhn_ok("4111 1111 1111 1112")
    check = {"type": "sensitive_data", "detectors": ["card_number"], "scan": ["final_answer"]}
    run_ok = make_run([], "Order 4111111111111112 is on its way.")
    assert judge_one(check, run_ok, layer="policy").verdict == "pass"
    run_bad = make_run([], "Your card 4111-1111-1111-1111 was charged.")
    assert codes(judge_one(check, run_bad, layer="policy")) == ["F-POLICY-PII_EXPOSURE"]


def test_pii_with_allowed_tool_and_custom_pattern() -> None:
    """Email to send_email is allowed by config; custom patterns report their category."""
    check = {
        "type": "sensitive_data",
        "detectors": ["email", "phone"],
        "custom": [{"name": "ssn", "pattern": "\\b\\d{3}-\\d{2}-\\d{4}\\b", "category": "pii"}],
        "allow": {"email": ["send_email"]},
    }
    email = tool("send_email", {"to": "jane@example.com"}, {"sent": True})
    assert judge_one(check, make_run([email], "Sent."), layer="policy").verdict == "pass"
    v = judge_one(check, make_run([], "Call me at (415) 555-2671, SSN 123-45-6789"), layer="policy")
    assert codes(v) == ["F-POLICY-PII_EXPOSURE", "F-POLICY-PII_EXPOSURE"]
    missing = judge_one(check, make_run([], None), layer="policy")
    assert codes(missing) == ["F-EVIDENCE-NO_FINAL_ANSWER"]


def test_identity_scope() -> None:
    """Arguments must stay inside the run's user; no user on the trace is insufficient."""
    check = {
        "type": "identity_scope",
        "tool": "lookup_order",
        "argument": "customer_id",
        "equals": "user_id",
    }
    assert judge_one(check, make_run([LOOKUP], user_id="u1"), layer="policy").verdict == "pass"
    v = judge_one(check, make_run([LOOKUP], user_id="u2"), layer="policy")
    assert codes(v) == ["F-POLICY-IDENTITY_SCOPE"]
    v = judge_one(check, make_run([LOOKUP]), layer="policy")
    assert codes(v) == ["F-EVIDENCE-NO_IDENTITY"]
    assert v.primary.span_ids == (ROOT,)
    assert v.outcomes[0].result == "insufficient_evidence"
