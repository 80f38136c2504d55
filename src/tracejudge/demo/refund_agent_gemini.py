"""The refund agent on Google Gemini (``google-genai``, function calls).

Same tools, world and run identity as ``refund_agent``; only the wire loop differs: tool
requests arrive as ``function_call`` parts of the model's turn and results go back as
``function_response`` parts (with the call's id) in a user turn. Automatic function
calling is off: the agent runs the tools itself, as the other flavours do, so each tool
execution is a ``@tool`` span joined to the model call that asked for it.
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
from tracejudge.demo.refund_tools import SYSTEM_PROMPT, build_tools, call_tool, gemini_tools
from tracejudge.demo.world import USER_REQUEST, World

DEFAULT_MODEL = "gemini-2.5-flash"


def run_refund_agent_gemini(
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
    """Run the refund agent once with a ``google.genai.Client``."""
    world = world if world is not None else World()
    tools = build_tools(world)
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": request}]}]
    config = {
        "system_instruction": SYSTEM_PROMPT,
        "tools": gemini_tools(),
        "max_output_tokens": 1024,
        "automatic_function_calling": {"disable": True},
    }
    with tracejudge.agent(
        AGENT_NAME,
        case_id=case_id,
        variant_id=variant_id,
        run_id=run_id,
        user_id=world.customer_id,
    ) as run:
        trace_id = current_trace_id()
        for turn in range(1, max_turns + 1):
            response = client.models.generate_content(model=model, contents=contents, config=config)
            content = response.candidates[0].content
            contents.append(content.model_dump(exclude_none=True))
            calls = [p.function_call for p in content.parts or [] if p.function_call]
            if not calls:
                answer = "".join(p.text or "" for p in content.parts or [])
                run.set_output(answer)
                return AgentResult(answer, world, trace_id, turn)
            answers = [
                {
                    "function_response": {
                        "id": call.id,
                        "name": call.name,
                        "response": json.loads(call_tool(tools, str(call.name), call.args)),
                    }
                }
                for call in calls
            ]
            contents.append({"role": "user", "parts": answers})
        raise AgentError(f"no final answer after {max_turns} model calls")
