"""The refund agent with the Anthropic SDK (Messages API, ``tool_use`` blocks).

Same tools, world and run identity as ``refund_agent``; only the wire loop differs:
tool requests arrive as ``tool_use`` content blocks and results go back as
``tool_result`` blocks in a user message. The judge sees the same ``Run`` either way.
"""

from __future__ import annotations

from typing import Any

import tracejudge
from tracejudge.demo.refund_agent import (
    AGENT_NAME,
    CASE_ID,
    AgentError,
    AgentResult,
    current_trace_id,
)
from tracejudge.demo.refund_tools import SYSTEM_PROMPT, anthropic_tools, build_tools, call_tool
from tracejudge.demo.world import USER_REQUEST, World

DEFAULT_MODEL = "claude-haiku-4-5"


def run_refund_agent_anthropic(
    client: Any,
    *,
    variant_id: str,
    run_id: str,
    world: World | None = None,
    case_id: str = CASE_ID,
    model: str = DEFAULT_MODEL,
    request: str = USER_REQUEST,
    stream: bool = False,
    max_turns: int = 8,
) -> AgentResult:
    """Run the refund agent once with an ``anthropic.Anthropic`` client.

    ``stream=True`` uses the SDK's ``messages.stream`` helper and its final message.
    """
    world = world if world is not None else World()
    tools = build_tools(world)
    messages: list[dict[str, Any]] = [{"role": "user", "content": request}]
    with tracejudge.agent(
        AGENT_NAME,
        case_id=case_id,
        variant_id=variant_id,
        run_id=run_id,
        user_id=world.customer_id,
    ) as run:
        trace_id = current_trace_id()
        for turn in range(1, max_turns + 1):
            request_args: dict[str, Any] = {
                "model": model,
                "max_tokens": 1024,
                "system": SYSTEM_PROMPT,
                "messages": messages,
                "tools": anthropic_tools(),
            }
            if stream:
                with client.messages.stream(**request_args) as events:
                    response = events.get_final_message()
            else:
                response = client.messages.create(**request_args)
            blocks = [block.model_dump(exclude_none=True) for block in response.content]
            messages.append({"role": "assistant", "content": blocks})
            uses = [b for b in blocks if b.get("type") == "tool_use"]
            if not uses:
                answer = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
                run.set_output(answer)
                return AgentResult(answer, world, trace_id, turn)
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": use["id"],
                    "content": call_tool(tools, str(use["name"]), use.get("input")),
                }
                for use in uses
            ]
            messages.append({"role": "user", "content": results})
        raise AgentError(f"no final answer after {max_turns} model calls")
