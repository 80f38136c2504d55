"""Builders for ``Run`` objects used by the engine tests (runs are built directly, no spans)."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from tracejudge.model.run import ModelCall, Run, Step, ToolCall

T0 = 1_700_000_000_000_000_000
STEP_NS = 10_000_000  # 10 ms per step


def tool(
    name: str,
    args: Any = None,
    result: Any = None,
    *,
    status: Literal["ok", "error", "unset"] = "ok",
    error_type: str | None = None,
    approval: bool | None = None,
    idem: str | None = None,
    args_json: bool = True,
) -> ToolCall:
    """One tool execution; span id and times are filled in by ``make_run``."""
    return ToolCall(
        span_id="",
        name=name,
        arguments=args,
        arguments_is_json=args_json,
        result=result,
        status=status,
        error_type=error_type if error_type or status != "error" else "ToolError",
        approval_granted=approval,
        idempotency_key=idem,
    )


def model(name: str = "gpt-4o-mini", tin: int | None = 100, tout: int | None = 20) -> ModelCall:
    """One chat model call."""
    return ModelCall(
        span_id="",
        operation="chat",
        request_model=name,
        response_model=name,
        input_tokens=tin,
        output_tokens=tout,
        status="ok",
    )


def span(i: int) -> str:
    """The span id ``make_run`` gives step ``i``."""
    return f"{i + 1:016x}"


ROOT = "00000000000000ff"
FINAL = "00000000000000fe"


def make_run(steps: list[Step], answer: str | None = "Done.", **kw: Any) -> Run:
    """A run with sequential span ids (``span(i)``), 10 ms per step, root ``ROOT``."""
    steps = [
        dataclasses.replace(
            s, span_id=span(i), start_ns=T0 + i * STEP_NS, end_ns=T0 + (i + 1) * STEP_NS
        )
        for i, s in enumerate(steps)
    ]
    fields: dict[str, Any] = {
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
        "root_span_id": ROOT,
        "agent_name": "support-agent",
        "steps": steps,
        "final_answer": answer,
        "final_answer_span_id": FINAL if answer is not None else None,
        "start_ns": T0,
        "end_ns": T0 + (len(steps) + 1) * STEP_NS,
    }
    fields.update(kw)
    return Run(**fields)


ORDERS = {
    "orders": [
        {"id": "A-100", "amount": 40.0, "is_duplicate": False},
        {"id": "B-200", "amount": 40.0, "is_duplicate": True},
    ]
}
GOOD_ANSWER = (
    "I've issued a refund of $40.00 for the duplicate charge on order B-200 "
    "(refund id re_ABC12345). It should be on its way within 3-5 business days."
)


def refund_run(variant: str = "healthy") -> Run:
    """The duplicate-charge refund case: healthy, no_refund, wrong_order or half_amount."""
    order_id = "A-100" if variant == "wrong_order" else "B-200"
    amount = 20.0 if variant == "half_amount" else 40.0
    steps: list[Step] = [
        model(),
        tool("lookup_order", {"customer_id": "u1"}, ORDERS),
        model(),
        tool("check_policy", {"order_id": order_id}, {"approved": True}),
        model(),
    ]
    if variant != "no_refund":
        steps.append(
            tool(
                "refund_api.create",
                {"order_id": order_id, "amount": amount, "idempotency_key": "k-1"},
                {"id": "re_ABC12345", "status": "succeeded"},
            )
        )
    # the silent failure still e-mails the customer: the refund is missing mid-run
    steps.append(
        tool("send_email", {"to": "u1", "body": "Your refund is on its way."}, {"sent": True})
    )
    steps.append(model())
    return make_run(steps, GOOD_ANSWER, case_id="dup-charge-1", user_id="u1")


REFUND_TOOLS: dict[str, Any] = {
    "lookup_order": {"kind": "lookup", "entities": "orders[*].id"},
    "check_policy": {"kind": "lookup"},
    "refund_api.create": {"kind": "mutate", "idempotency_argument": "idempotency_key"},
    "send_email": {"kind": "notify"},
    "request_approval": {"kind": "approval"},
}


def rules_text(
    check: dict[str, Any],
    *,
    layer: str = "trajectory",
    severity: str = "fail",
    select: dict[str, Any] | None = None,
    tools: dict[str, Any] | None = None,
    prices: dict[str, Any] | None = None,
) -> str:
    """A one-rule rules file (JSON is YAML) around ``check``."""
    import json

    rule: dict[str, Any] = {"id": "r1", "layer": layer, "severity": severity, "check": check}
    if select is not None:
        rule["select"] = select
    doc: dict[str, Any] = {"version": 1, "tools": REFUND_TOOLS if tools is None else tools}
    if prices is not None:
        doc["prices"] = prices
    doc["rules"] = [rule]
    return json.dumps(doc)


def judge_one(check: dict[str, Any], run: Run, **kw: Any) -> Any:
    """Judge ``run`` with a single-rule engine; returns the Verdict."""
    from tracejudge.engine import Engine, load_rules_text

    baselines = kw.pop("baselines", None)
    strict = kw.pop("strict", False)
    rules = load_rules_text(rules_text(check, **kw))
    engine = Engine(rules, baselines, strict=True) if strict else Engine(rules, baselines)
    return engine.judge(run)


def codes(verdict: Any) -> list[str]:
    """The finding codes of a verdict, in primary order."""
    return [f.code for f in verdict.findings]
