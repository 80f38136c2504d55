"""The refund agent on Cohere (``cohere`` v2 ``ClientV2.chat`` with tool calls).

Cohere's v2 messages have OpenAI's shapes (``tool_calls`` on the assistant turn, ``tool``
messages with the call's id), so this is ``refund_agent``'s loop with Cohere's model call:
same tools, world and run identity.
"""

from __future__ import annotations

from typing import Any

from tracejudge.demo.refund_agent import AgentResult, run_refund_agent
from tracejudge.demo.refund_tools import openai_tools

DEFAULT_MODEL = "command-a-03-2025"


def complete_cohere(
    client: Any, model: str, messages: list[dict[str, Any]], stream: bool
) -> dict[str, Any]:
    """One ``client.chat`` call; the assistant message as a dict (``content`` the text)."""
    response = client.chat(model=model, messages=messages, tools=openai_tools())
    message = response.message
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.function.name, "arguments": c.function.arguments},
        }
        for c in message.tool_calls or []
    ]
    text = "".join(getattr(part, "text", "") or "" for part in message.content or [])
    return {"role": "assistant", "content": text or None, "tool_calls": calls}


def run_refund_agent_cohere(
    client: Any, *, variant_id: str, run_id: str, model: str = DEFAULT_MODEL, **options: Any
) -> AgentResult:
    """Run the refund agent once with a ``cohere.ClientV2``."""
    return run_refund_agent(
        client,
        variant_id=variant_id,
        run_id=run_id,
        model=model,
        complete=complete_cohere,
        **options,
    )
