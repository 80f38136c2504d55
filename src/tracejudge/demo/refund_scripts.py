"""The refund agent's scripted "model", one script per variant.

Each variant is what a real model might do with the same request and tools:

- ``healthy``: looks up the orders, checks policy, refunds the duplicate in full, emails.
- ``silent_failure``: checks policy, then answers that the refund is processed and a
  confirmation email is on its way, without calling ``refund_api.create`` or
  ``send_email`` (the answer claims side effects that never happened).
- ``wrong_order``: refunds the original order ``ord_A1001`` instead of the duplicate.
- ``half_amount``: checks the full charge with the policy, then refunds only half of it
  (argument drift against the healthy baseline); its answer states the smaller amount.

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
        if order.get("is_duplicate"):
            return order
    raise ScriptError("the lookup returned no duplicate charge")


def _first(orders: list[dict[str, Any]]) -> dict[str, Any]:
    return orders[0]


def _word(conv: Conversation, test: Callable[[str], bool]) -> str:
    return next((w.strip("().,") for w in conv.user_text.split() if test(w.strip("().,"))), "")


def _lookup(conv: Conversation) -> Reply:
    customer = _word(conv, lambda w: w.startswith("cus_"))
    return Reply(tool_calls=(ToolRequest("lookup_order", {"customer_id": customer}),))


def _policy(pick: Picker) -> Step:
    def step(conv: Conversation) -> Reply:
        order = pick(_orders(conv))
        args = {"order_id": order["id"], "amount": float(order["amount"])}
        return Reply(tool_calls=(ToolRequest("check_policy", args),))

    return step


def _checked(conv: Conversation) -> dict[str, Any]:
    """The arguments of the latest policy check (the order and amount the model settled on)."""
    for item in reversed(conv.tool_results):
        if item.name == "check_policy" and isinstance(item.arguments, dict):
            return item.arguments
    raise ScriptError("the script needs a check_policy call, but the agent never sent one")


def _refund(share: float) -> Step:
    def step(conv: Conversation) -> Reply:
        policy = conv.result_of("check_policy")
        if not isinstance(policy, dict) or not policy.get("approved"):
            return Reply(text="I'm sorry, this charge is not eligible for a refund.")
        checked = _checked(conv)
        args = {
            "order_id": checked["order_id"],
            "amount": round(float(checked["amount"]) * share, 2),
            "reason": "duplicate_charge",
            "idempotency_key": f"refund-{checked['order_id']}",
        }
        return Reply(tool_calls=(ToolRequest("refund_api.create", args),))

    return step


def _claimed(conv: Conversation) -> tuple[str, float, str | None]:
    """Order, amount and refund id the model believes in: the refund's result if it made
    one, else what it checked with the policy (the silent failure's unfounded belief)."""
    for item in reversed(conv.tool_results):
        r = item.result
        if item.name == "refund_api.create" and isinstance(r, dict) and "refund_id" in r:
            return str(r["order_id"]), float(r["amount"]), str(r["refund_id"])
    checked = _checked(conv)
    return str(checked["order_id"]), float(checked["amount"]), None


def _email(conv: Conversation) -> Reply:
    order_id, amount, _ = _claimed(conv)
    body = (
        f"Hi Dana, we have refunded ${amount:.2f} for order {order_id}. "
        "It will appear on your statement within 5-7 business days."
    )
    to = _word(conv, lambda w: "@" in w)
    args = {"to": to, "subject": "Your refund", "body": body}
    return Reply(tool_calls=(ToolRequest("send_email", args),))


def _answer(conv: Conversation) -> Reply:
    order_id, amount, refund_id = _claimed(conv)
    reference = f" (refund {refund_id})" if refund_id else ""
    return Reply(
        text=(
            f"Your refund for order {order_id} has been processed: ${amount:.2f}{reference} "
            "will be back on your card within 5-7 business days. A confirmation email is on "
            "its way."
        )
    )


def refund_script(variant: str) -> Script:
    """The script of one variant; ValueError names the known variants for anything else."""
    plans: dict[str, list[Step]] = {
        "healthy": [_lookup, _policy(_duplicate), _refund(1.0), _email, _answer],
        "silent_failure": [_lookup, _policy(_duplicate), _answer],
        "wrong_order": [_lookup, _policy(_first), _refund(1.0), _email, _answer],
        "half_amount": [_lookup, _policy(_duplicate), _refund(0.5), _email, _answer],
    }
    if variant not in plans:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    return Script(name=variant, steps=plans[variant])


def refund_scripts() -> list[Script]:
    """All variants' scripts."""
    return [refund_script(v) for v in VARIANTS]
