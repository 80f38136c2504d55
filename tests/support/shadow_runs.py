"""Stable and shadow runs of one request, made by the real ``tracejudge.agent`` /
``tracejudge.tool`` instrumentation.

A ``refund`` run looks the order up and refunds it (terminal action ``refund``); a
``no_refund`` run looks it up and stops (a shadow that diverges: the refund call is missing
and the terminal action is ``no_action``); ``half`` refunds half the amount (argument
drift only). The rules (``RULES``) declare the kinds, so the terminal action is the
``refund`` category, and pass every one of these runs: what differs between a stable run
and its shadow is reported by pairing, not by the rules.
"""

from __future__ import annotations

from typing import Literal

import tracejudge

Shape = Literal["refund", "no_refund", "half"]
AGENT = "support"
RULES = """\
version: 1
tools:
  lookup_order: {kind: lookup}
  refund_api.create: {kind: mutate, category: refund}
rules:
  - id: look-it-up
    layer: trajectory
    check: {type: required_steps, tools: [lookup_order]}
"""


def run_once(
    shape: Shape,
    *,
    request_id: str | None,
    shadow: bool = False,
    variant: str = "stable",
) -> None:
    """One agent run of ``shape`` answering ``request_id`` (a shadow with ``shadow``)."""
    with tracejudge.agent(AGENT, variant_id=variant, request_id=request_id, shadow=shadow) as run:
        with tracejudge.tool("lookup_order", effect="read", arguments={"id": "A1"}) as t:
            t.set_result({"orders": [{"id": "A1", "amount": 40}]})
        if shape != "no_refund":
            amount = 20.0 if shape == "half" else 40.0
            args = {"order_id": "A1", "amount": amount}
            with tracejudge.tool("refund_api.create", effect="write", arguments=args) as t:
                t.set_result({"id": "re_1", "status": "succeeded"})
        run.set_output("Your order A1 has been looked at.")
