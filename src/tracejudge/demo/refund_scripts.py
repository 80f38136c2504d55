"""The refund agent's scripted "model", one script per variant.

Each variant is what a real model might do with the same request and tools:

- ``healthy``: looks up the orders, checks policy, refunds the duplicate in full, emails.
- ``silent_failure``: checks policy, then emails and answers that the refund is done,
  without ever calling ``refund_api.create`` (the answer claims a side effect that never happened).
- ``wrong_order``: refunds the original order ``ord_A1001`` instead of the duplicate.
- ``half_amount``: refunds the right order but only half the charge (argument drift
  against the healthy baseline); its answer honestly states the smaller amount.

Every step reads the tool results the agent actually sent back (``Conversation.result_of``),
so the order id and amount come from the lookup, like a real model's would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracejudge.demo.script import Conversation, Reply, Script, ScriptError, Step, ToolRequest

VARIANTS: tuple[str, ...] = ("healthy", "silent_failure", "wrong_order", "half_amount")
"""The variants, in the order the demo runs them."""

Picker = Callable[[list[dict[str, Any]]], dict[str, Any]]


def _orders(conv: Conversation) -> list[dict[str, Any]]:
    result = conv.result_of("lookup_order")
    if not isinstance(result, dict) or not isinstance(result.get("orders"), list):
        raise ScriptError(f"lookup_order returned no orders: {result!r}")
    return [o for o in result["orders"] if isinstance(o, dict)]


def _duplicate(orders: list[dict[str, Any]]) -> dict[str, Any]:
    for order in orders:
        if order.get("duplicate_of"):
            return order
    raise ScriptError("the lookup returned no duplicate charge")


def _first(orders: list[dict[str, Any]]) -> dict[str, Any]:
    return orders[0]


def _lookup(conv: Conversation) -> Reply:
    email = next((w.strip("().,") for w in conv.user_text.split() if "@" in w), "")
    return Reply(tool_calls=(ToolRequest("lookup_order", {"customer_email": email}),))


def _policy(pick: Picker, share: float) -> Step:
    def step(conv: Conversation) -> Reply:
        order = pick(_orders(conv))
        amount = round(float(order["amount"]) * share, 2)
        args = {"order_id": order["order_id"], "amount": amount}
        return Reply(tool_calls=(ToolRequest("check_policy", args),))

    return step


def _refund(conv: Conversation) -> Reply:
    policy = conv.result_of("check_policy")
    checked = next(r for r in reversed(conv.tool_results) if r.name == "check_policy")
    if not isinstance(policy, dict) or not policy.get("eligible"):
        return Reply(text="I'm sorry, this charge is not eligible for a refund.")
    args = {
        "order_id": checked.arguments["order_id"],
        "amount": checked.arguments["amount"],
        "reason": "duplicate_charge",
        "idempotency_key": f"refund-{checked.arguments['order_id']}",
    }
    return Reply(tool_calls=(ToolRequest("refund_api.create", args),))


def _claimed(conv: Conversation) -> tuple[str, float]:
    """The order and amount the model believes it refunded (from its own policy check)."""
    checked = next(r for r in reversed(conv.tool_results) if r.name == "check_policy")
    return str(checked.arguments["order_id"]), float(checked.arguments["amount"])


def _email(conv: Conversation) -> Reply:
    order_id, amount = _claimed(conv)
    body = (
        f"Hi Dana, we have refunded ${amount:.2f} for order {order_id}. "
        "It will appear on your statement within 5-7 business days."
    )
    args = {"to": "dana.reyes@example.com", "subject": "Your refund", "body": body}
    return Reply(tool_calls=(ToolRequest("send_email", args),))


def _answer(conv: Conversation) -> Reply:
    order_id, amount = _claimed(conv)
    return Reply(
        text=(
            f"Done! I've refunded the duplicate charge of ${amount:.2f} on order {order_id}. "
            "You'll see it on your statement within 5-7 business days, and a confirmation "
            "email is on its way."
        )
    )


def refund_script(variant: str) -> Script:
    """The script of one variant; ValueError names the known variants for anything else."""
    plans: dict[str, list[Step]] = {
        "healthy": [_lookup, _policy(_duplicate, 1.0), _refund, _email, _answer],
        "silent_failure": [_lookup, _policy(_duplicate, 1.0), _email, _answer],
        "wrong_order": [_lookup, _policy(_first, 1.0), _refund, _email, _answer],
        "half_amount": [_lookup, _policy(_duplicate, 0.5), _refund, _email, _answer],
    }
    if variant not in plans:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    return Script(name=variant, steps=plans[variant])


def refund_scripts() -> list[Script]:
    """All variants' scripts."""
    return [refund_script(v) for v in VARIANTS]
