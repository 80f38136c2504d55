"""An existing agent, as you might already have it: a plain OpenAI tool-calling loop.

Nothing in this file knows about tracejudge. The tools are undecorated functions and there is
no ``tracejudge.agent(...)`` block: ``run_evals.py`` adds the one ``tracejudge.instrument(...)``
line, and the judge infers each tool execution from the conversation (the model asked for
call X; the next request carried X's result), marking those steps as inferred.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.demo.world import USER_REQUEST, World

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {p: {} for p in params}},
        },
    }
    for name, params in [
        ("lookup_order", ["customer_id"]),
        ("check_policy", ["order_id", "amount"]),
        ("refund_api.create", ["order_id", "amount", "reason", "idempotency_key"]),
        ("send_email", ["to", "subject", "body"]),
    ]
]


def handle_ticket(client: Any, world: World, ticket: str = USER_REQUEST) -> str:
    """Answer one support ticket, using tools until the model stops asking for them."""
    tools = {
        "lookup_order": world.lookup_order,
        "check_policy": world.check_policy,
        "refund_api.create": world.create_refund,
        "send_email": world.send_email,
    }
    messages: list[dict[str, Any]] = [{"role": "user", "content": ticket}]
    for _ in range(8):
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            return str(message.content or "")
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            try:
                result: Any = tools[call.function.name](**json.loads(call.function.arguments))
            except (KeyError, TypeError, ValueError) as exc:
                result = {"error": str(exc)}
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
    raise RuntimeError("no answer after 8 model calls")
