"""The refund agent's world: an in-memory store of one customer's orders, and its tools.

The tools are plain Python functions over this store, so "did the refund happen" has a
ground truth (``World.refunds``) that the demo can print next to what the agent claimed.
The customer was charged twice for one kettle: order ``ord_A1001`` is the real purchase,
``ord_B1002`` is the duplicate charge (``is_duplicate``; ``duplicate_of`` names the
original). The right action is one refund of the full amount of ``ord_B1002``. The field
names are the ones ``examples/refund/rules.yaml`` reads (``orders[*].id``,
``is_duplicate``, ``approved``).
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from typing import Any

CUSTOMER_ID = "cus_4821"
CUSTOMER_EMAIL = "dana.reyes@example.com"
ORIGINAL_ORDER = "ord_A1001"
DUPLICATE_ORDER = "ord_B1002"
CHARGE = 84.00

USER_REQUEST = (
    f"Hi, I'm Dana Reyes (customer {CUSTOMER_ID}, {CUSTOMER_EMAIL}). I was charged twice "
    "for my blue kettle last week. Please refund the duplicate charge."
)

_ORDERS: list[dict[str, Any]] = [
    {
        "id": ORIGINAL_ORDER,
        "item": "Blue enamel kettle",
        "amount": CHARGE,
        "currency": "USD",
        "charged_at": "2026-11-21T09:14:02Z",
        "status": "paid",
        "is_duplicate": False,
    },
    {
        "id": DUPLICATE_ORDER,
        "item": "Blue enamel kettle",
        "amount": CHARGE,
        "currency": "USD",
        "charged_at": "2026-11-21T09:14:41Z",
        "status": "paid",
        "is_duplicate": True,
        "duplicate_of": ORIGINAL_ORDER,
    },
]


class ToolInputError(ValueError):
    """A tool was called with arguments it cannot act on (reported back to the model)."""


@dataclass(slots=True)
class World:
    """One customer's orders, and what the tools did to them."""

    customer_id: str = CUSTOMER_ID
    email: str = CUSTOMER_EMAIL
    orders: list[dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(_ORDERS))
    refunds: list[dict[str, Any]] = field(default_factory=list)
    emails: list[dict[str, Any]] = field(default_factory=list)

    def _order(self, order_id: str) -> dict[str, Any]:
        for order in self.orders:
            if order["id"] == order_id:
                return order
        raise ToolInputError(f"no order {order_id!r} for customer {self.customer_id}")

    def lookup_order(self, customer_id: str) -> dict[str, Any]:
        """The customer's recent orders (read)."""
        if customer_id.strip() != self.customer_id:
            raise ToolInputError(f"no customer {customer_id!r}")
        return {"customer_id": self.customer_id, "orders": copy.deepcopy(self.orders)}

    def check_policy(self, order_id: str, amount: float) -> dict[str, Any]:
        """Whether refunding ``amount`` on ``order_id`` is allowed (read)."""
        order = self._order(order_id)
        refundable = round(order["amount"] - order.get("refunded", 0.0), 2)
        eligible = 0 < amount <= refundable
        return {
            "order_id": order_id,
            "eligible": eligible,
            "approved": eligible,
            "max_refund": refundable,
            "reason": "within the 30-day refund window" if eligible else "amount not refundable",
        }

    def create_refund(
        self, order_id: str, amount: float, reason: str, idempotency_key: str
    ) -> dict[str, Any]:
        """Refund ``amount`` on ``order_id`` (write): the one mutation of the world."""
        order = self._order(order_id)
        for refund in self.refunds:
            if refund["idempotency_key"] == idempotency_key:
                return dict(refund)
        if not 0 < amount <= order["amount"] - order.get("refunded", 0.0):
            raise ToolInputError(f"cannot refund {amount:.2f} on {order_id}")
        order["refunded"] = round(order.get("refunded", 0.0) + amount, 2)
        refund = {
            "refund_id": "re_" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:12],
            "order_id": order_id,
            "amount": amount,
            "currency": order["currency"],
            "reason": reason,
            "status": "succeeded",
            "idempotency_key": idempotency_key,
        }
        self.refunds.append(refund)
        return dict(refund)

    def send_email(self, to: str, subject: str, body: str) -> dict[str, Any]:
        """Send an email to the customer (notify)."""
        if to.strip().lower() != self.email:
            raise ToolInputError(f"refusing to email {to!r}: not the customer on file")
        message = {"message_id": f"msg_{len(self.emails) + 1:04d}", "to": to, "status": "sent"}
        self.emails.append({**message, "subject": subject, "body": body})
        return message
