"""The refund agent (OpenAI SDK): the one copy of the agent loop that the demo and examples run.

The loop is the plain tool-calling loop of most agents: send the conversation and the
tools to ``client.chat.completions.create``, run the tools the model asks for, feed their
results back as ``tool`` messages, and stop at the first answer without tool calls. The
only tracejudge code is ``tracejudge.agent(...)`` around the run (identity + final answer)
and ``@tracejudge.tool`` on the tools; the model calls are traced by the one
``tracejudge.instrument()`` line of the program that calls this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace

import tracejudge
from tracejudge.demo.refund_tools import SYSTEM_PROMPT, build_tools, call_tool, openai_tools
from tracejudge.demo.world import USER_REQUEST, World

AGENT_NAME = "refund-agent"
CASE_ID = "refund-duplicate-charge"
DEFAULT_MODEL = "gpt-4o-mini"


class AgentError(RuntimeError):
    """The agent could not finish (no final answer within the turn limit)."""


@dataclass(slots=True)
class AgentResult:
    """What one run produced: the answer, the world after it, and the trace it made."""

    answer: str
    world: World
    trace_id: str | None
    model_calls: int


def current_trace_id() -> str | None:
    """The hex id of the trace the caller is in (None outside a recording span)."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


Complete = Callable[[Any, str, list[dict[str, Any]], bool], dict[str, Any]]
"""One model call of an SDK with OpenAI's chat shapes: ``(client, model, messages,
stream)`` → the assistant message as a dict (``content``, ``tool_calls``)."""


def _complete(
    client: Any, model: str, messages: list[dict[str, Any]], stream: bool
) -> dict[str, Any]:
    """One model call; returns an assistant message dict (content, tool_calls)."""
    if not stream:
        response = client.chat.completions.create(
            model=model, messages=messages, tools=openai_tools()
        )
        message = response.choices[0].message
        calls = [
            {"id": c.id, "type": "function", "function": c.function.model_dump()}
            for c in message.tool_calls or []
        ]
        return {"role": "assistant", "content": message.content, "tool_calls": calls}
    text: list[str] = []
    calls_by_index: dict[int, dict[str, Any]] = {}
    events = client.chat.completions.create(
        model=model,
        messages=messages,
        tools=openai_tools(),
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in events:
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
            for part in delta.tool_calls or []:
                call = calls_by_index.setdefault(
                    part.index,
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                call["id"] = part.id or call["id"]
                if part.function is not None:
                    call["function"]["name"] += part.function.name or ""
                    call["function"]["arguments"] += part.function.arguments or ""
    calls = [calls_by_index[i] for i in sorted(calls_by_index)]
    return {"role": "assistant", "content": "".join(text) or None, "tool_calls": calls}


def run_refund_agent(
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
    complete: Complete = _complete,
) -> AgentResult:
    """Run the refund agent once with an ``openai.OpenAI`` client and return its answer
    (``complete``: the model call, for another SDK with OpenAI's chat shapes)."""
    world = world if world is not None else World()
    tools = build_tools(world)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": request},
    ]
    with tracejudge.agent(
        AGENT_NAME,
        case_id=case_id,
        variant_id=variant_id,
        run_id=run_id,
        user_id=world.customer_id,
    ) as run:
        trace_id = current_trace_id()
        for turn in range(1, max_turns + 1):
            message = complete(client, model, messages, stream)
            if not message["tool_calls"]:
                del message["tool_calls"]
                messages.append(message)
                answer = message["content"] or ""
                run.set_output(answer)
                return AgentResult(answer, world, trace_id, turn)
            messages.append(message)
            for call in message["tool_calls"]:
                function = call["function"]
                content = call_tool(tools, function["name"], function["arguments"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        raise AgentError(f"no final answer after {max_turns} model calls")
