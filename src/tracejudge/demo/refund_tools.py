"""The refund agent's tools: instrumented functions over a ``World``, and their schemas.

Each tool is an ordinary function decorated with ``@tracejudge.tool`` and the effect it
has on the world (read, write, notify); that declaration is what lets trajectory rules
tell a lookup from a side effect. The tools are built per run as closures over one
``World``, so concurrent runs never share state.

Tool names are the names the model calls and the names the spans carry. ``refund_api.create``
keeps the dot the rules use; the scripted server accepts it, while the hosted OpenAI and
Anthropic APIs only accept ``[A-Za-z0-9_-]`` (map the name if you point this at them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import tracejudge
from tracejudge.demo.world import World


@dataclass(slots=True, frozen=True)
class ToolSpec:
    """A provider-neutral tool declaration (name, description, JSON schema of the input)."""

    name: str
    description: str
    parameters: dict[str, Any]


def _schema(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_STR = {"type": "string"}
_NUM = {"type": "number"}

TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "lookup_order",
        "List the customer's recent orders and charges.",
        _schema({"customer_id": _STR}),
    ),
    ToolSpec(
        "check_policy",
        "Check whether refunding an amount on an order is allowed.",
        _schema({"order_id": _STR, "amount": _NUM}),
    ),
    ToolSpec(
        "refund_api.create",
        "Refund an amount on an order. This moves money.",
        _schema({"order_id": _STR, "amount": _NUM, "reason": _STR, "idempotency_key": _STR}),
    ),
    ToolSpec(
        "send_email",
        "Email the customer.",
        _schema({"to": _STR, "subject": _STR, "body": _STR}),
    ),
)

SYSTEM_PROMPT = (
    "You are the support agent of Kettle & Co. Use the tools to act; never say an action "
    "was taken unless a tool did it. Look up the customer's orders, check the refund "
    "policy, refund the right order, email the customer, then answer briefly."
)


def openai_tools() -> list[dict[str, Any]]:
    """The tools in the OpenAI Chat Completions ``tools`` shape."""
    return [
        {
            "type": "function",
            "function": {"name": s.name, "description": s.description, "parameters": s.parameters},
        }
        for s in TOOL_SPECS
    ]


def anthropic_tools() -> list[dict[str, Any]]:
    """The tools in the Anthropic Messages ``tools`` shape."""
    return [
        {"name": s.name, "description": s.description, "input_schema": s.parameters}
        for s in TOOL_SPECS
    ]


def bedrock_tools() -> dict[str, Any]:
    """The tools as a Bedrock Converse ``toolConfig``."""
    return {
        "tools": [
            {
                "toolSpec": {
                    "name": s.name,
                    "description": s.description,
                    "inputSchema": {"json": s.parameters},
                }
            }
            for s in TOOL_SPECS
        ]
    }


def gemini_tools() -> list[dict[str, Any]]:
    """The tools as Gemini ``tools`` (one tool of function declarations, JSON Schema)."""
    return [
        {
            "function_declarations": [
                {
                    "name": s.name,
                    "description": s.description,
                    "parameters_json_schema": s.parameters,
                }
                for s in TOOL_SPECS
            ]
        }
    ]


def build_tools(world: World) -> dict[str, Callable[..., Any]]:
    """The instrumented tool functions over ``world``, by tool name."""

    @tracejudge.tool(name="lookup_order", effect="read")
    def lookup_order(customer_id: str) -> dict[str, Any]:
        return world.lookup_order(customer_id)

    @tracejudge.tool(name="check_policy", effect="read")
    def check_policy(order_id: str, amount: float) -> dict[str, Any]:
        return world.check_policy(order_id, amount)

    @tracejudge.tool(name="refund_api.create", effect="write")
    def refund_create(
        order_id: str, amount: float, reason: str, idempotency_key: str
    ) -> dict[str, Any]:
        return world.create_refund(order_id, amount, reason, idempotency_key)

    @tracejudge.tool(name="send_email", effect="notify")
    def send_email(to: str, subject: str, body: str) -> dict[str, Any]:
        return world.send_email(to, subject, body)

    return {
        "lookup_order": lookup_order,
        "check_policy": check_policy,
        "refund_api.create": refund_create,
        "send_email": send_email,
    }


def call_tool(tools: Mapping[str, Callable[..., Any]], name: str, arguments: Any) -> str:
    """Run one requested tool and return the text to send back to the model.

    A bad request (unknown tool, arguments that are not an object, a tool error) becomes an
    ``{"error": ...}`` result the model can read, as agent frameworks do; the tool's span
    has already recorded the error.
    """
    tool = tools.get(name)
    if tool is None:
        return json.dumps({"error": f"unknown tool {name!r}"})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError as exc:
            return json.dumps({"error": f"arguments are not JSON: {exc}"})
    if not isinstance(arguments, dict):
        return json.dumps({"error": "arguments must be a JSON object"})
    try:
        return json.dumps(tool(**arguments))
    except (TypeError, ValueError) as exc:
        return json.dumps({"error": str(exc)})
