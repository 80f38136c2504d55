"""The refund agent on AWS Bedrock (boto3 ``bedrock-runtime`` Converse, ``toolUse`` blocks).

Same tools, world and run identity as ``refund_agent``; only the wire loop differs: tool
requests arrive as ``toolUse`` content blocks and results go back as ``toolResult`` blocks
in a user message. The judge sees the same ``Run`` either way.
"""

from __future__ import annotations

import json
from typing import Any

import tracejudge
from tracejudge.demo.refund_agent import (
    AGENT_NAME,
    CASE_ID,
    AgentError,
    AgentResult,
    current_trace_id,
)
from tracejudge.demo.refund_tools import SYSTEM_PROMPT, bedrock_tools, build_tools, call_tool
from tracejudge.demo.world import USER_REQUEST, World

DEFAULT_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


def run_refund_agent_bedrock(
    client: Any,
    *,
    variant_id: str,
    run_id: str,
    world: World | None = None,
    case_id: str = CASE_ID,
    model: str = DEFAULT_MODEL,
    request: str = USER_REQUEST,
    max_turns: int = 8,
) -> AgentResult:
    """Run the refund agent once with a boto3 ``bedrock-runtime`` client."""
    world = world if world is not None else World()
    tools = build_tools(world)
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": request}]}]
    with tracejudge.agent(
        AGENT_NAME,
        case_id=case_id,
        variant_id=variant_id,
        run_id=run_id,
        user_id=world.customer_id,
    ) as run:
        trace_id = current_trace_id()
        for turn in range(1, max_turns + 1):
            response = client.converse(
                modelId=model,
                system=[{"text": SYSTEM_PROMPT}],
                messages=messages,
                toolConfig=bedrock_tools(),
                inferenceConfig={"maxTokens": 1024},
            )
            message = response["output"]["message"]
            messages.append(message)
            uses = [b["toolUse"] for b in message["content"] if "toolUse" in b]
            if not uses:
                answer = run_output(message)
                run.set_output(answer)
                return AgentResult(answer, world, trace_id, turn)
            results = [
                {
                    "toolResult": {
                        "toolUseId": use["toolUseId"],
                        "content": [
                            {"json": json.loads(call_tool(tools, use["name"], use.get("input")))}
                        ],
                    }
                }
                for use in uses
            ]
            messages.append({"role": "user", "content": results})
        raise AgentError(f"no final answer after {max_turns} model calls")


def run_output(message: dict[str, Any]) -> str:
    """The text of an assistant message."""
    return "".join(str(b.get("text", "")) for b in message["content"])
