"""The refund agent on Mistral AI (``mistralai``, ``chat.complete`` with tool calls).

Mistral's chat API has OpenAI's shapes (messages, ``tools``, ``tool_calls``, ``tool``
messages), so this is ``refund_agent``'s loop with Mistral's model call: same tools, world
and run identity.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.demo.refund_agent import AgentResult, run_refund_agent
from tracejudge.demo.refund_tools import openai_tools

DEFAULT_MODEL = "mistral-small-latest"


def complete_mistral(
    client: Any, model: str, messages: list[dict[str, Any]], stream: bool
) -> dict[str, Any]:
    """One ``client.chat.complete`` call; the assistant message as a dict (arguments as
    JSON text, as the loop passes them to the tools)."""
    response = client.chat.complete(model=model, messages=messages, tools=openai_tools())
    message = response.choices[0].message
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {
                "name": c.function.name,
                "arguments": c.function.arguments
                if isinstance(c.function.arguments, str)
                else json.dumps(c.function.arguments),
            },
        }
        for c in message.tool_calls or []
    ]
    return {"role": "assistant", "content": message.content, "tool_calls": calls}


def run_refund_agent_mistral(
    client: Any, *, variant_id: str, run_id: str, model: str = DEFAULT_MODEL, **options: Any
) -> AgentResult:
    """Run the refund agent once with a ``mistralai`` ``Mistral`` client."""
    return run_refund_agent(
        client,
        variant_id=variant_id,
        run_id=run_id,
        model=model,
        complete=complete_mistral,
        **options,
    )
