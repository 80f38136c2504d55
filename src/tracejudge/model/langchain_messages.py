"""LangChain messages, as the LangSmith OTel bridge exports them, in the GenAI form.

Why: LangChain and LangGraph emit no GenAI spans of their own; through LangSmith's OTel
exporter (``LANGSMITH_OTEL_ENABLED``) an LLM run becomes a ``chat`` span whose request
and response are the run's raw inputs and outputs as JSON in the deprecated
``gen_ai.prompt`` / ``gen_ai.completion``. Those are LangChain's own shapes, not GenAI
messages — without translating them a LangGraph run has tool executions but no model
call a rule can read (no conversation, no requested tool calls, no final answer).

Shapes (langchain-core 1.8.4 ``tracers/core.py``): the inputs of a chat-model run are
``{"messages": [[message, ...]]}`` (one list per prompt of the batch), each message
``dumpd``-serialised (``{"lc": 1, "type": "constructor", "id": [..., "AIMessage"],
"kwargs": {...}}``); the outputs are ``LLMResult.model_dump()`` with each generation's
``message`` ``dumpd``-serialised again: ``{"generations": [[{"text": ..., "message":
...}]], ...}``. A message's fields (in ``kwargs``, or at the top for a plain
``model_dump``) are ``type`` (``human``/``ai``/``system``/``tool``), ``content`` (a
string or content blocks), ``tool_calls`` (``[{"name", "args", "id"}]``) and, on tool
messages, ``tool_call_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from tracejudge.model.messages import (
    ARGUMENTS,
    CONTENT,
    FINISH_REASON,
    ID,
    NAME,
    PART_TEXT,
    PART_TOOL_CALL,
    PART_TOOL_CALL_RESPONSE,
    PARTS,
    RESPONSE,
    ROLE,
    ROLE_ASSISTANT,
    ROLE_SYSTEM,
    ROLE_TOOL,
    ROLE_USER,
    TEXT,
    TOOL_CALL_ID,
    TOOL_CALLS,
    TYPE,
)

__all__ = ["langchain_inputs", "langchain_outputs"]

_ROLES: Final = {
    "human": ROLE_USER,
    "ai": ROLE_ASSISTANT,
    "system": ROLE_SYSTEM,
    "tool": ROLE_TOOL,
    "HumanMessage": ROLE_USER,
    "AIMessage": ROLE_ASSISTANT,
    "AIMessageChunk": ROLE_ASSISTANT,
    "SystemMessage": ROLE_SYSTEM,
    "ToolMessage": ROLE_TOOL,
}
_KWARGS: Final = "kwargs"
_LC_ID: Final = "id"
_MESSAGES: Final = "messages"
_GENERATIONS: Final = "generations"
_MESSAGE: Final = "message"
_GENERATION_INFO: Final = "generation_info"
_ARGS: Final = "args"


def _fields(message: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """A message's fields and its role (``dumpd`` form or plain dump)."""
    kwargs = message.get(_KWARGS)
    fields = kwargs if isinstance(kwargs, Mapping) else message
    role = _ROLES.get(str(fields.get(TYPE) or ""), "")
    if not role:
        path = message.get(_LC_ID)
        if isinstance(path, list) and path:
            role = _ROLES.get(str(path[-1]), "")
    return fields, role


def _text_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{TYPE: PART_TEXT, CONTENT: content}] if content else []
    parts: list[dict[str, Any]] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                parts.append({TYPE: PART_TEXT, CONTENT: block})
            elif isinstance(block, Mapping) and isinstance(block.get(TEXT), str):
                parts.append({TYPE: PART_TEXT, CONTENT: block[TEXT]})
    return parts


def _message(value: Any, default_role: str) -> dict[str, Any] | None:
    if not isinstance(value, Mapping):
        return None
    fields, role = _fields(value)
    role = role or default_role
    content = fields.get(CONTENT)
    if role == ROLE_TOOL:
        response = {TYPE: PART_TOOL_CALL_RESPONSE, ID: fields.get(TOOL_CALL_ID), RESPONSE: content}
        return {ROLE: role, PARTS: [response]}
    parts = _text_parts(content)
    calls = fields.get(TOOL_CALLS)
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, Mapping) and isinstance(call.get(NAME), str):
            parts.append(
                {
                    TYPE: PART_TOOL_CALL,
                    ID: call.get(ID),
                    NAME: call[NAME],
                    ARGUMENTS: call.get(_ARGS),
                }
            )
    return {ROLE: role, PARTS: parts}


def langchain_inputs(value: Any) -> list[dict[str, Any]] | None:
    """GenAI messages from a chat-model run's inputs (the first prompt of the batch);
    None when they are not that shape."""
    if not isinstance(value, Mapping):
        return None
    batches = value.get(_MESSAGES)
    if not isinstance(batches, list) or not batches:
        return None
    first = batches[0] if isinstance(batches[0], list) else batches
    out = [m for m in (_message(x, ROLE_USER) for x in first) if m is not None]
    return out or None


def langchain_outputs(value: Any) -> list[dict[str, Any]] | None:
    """GenAI messages from a chat-model run's outputs (``LLMResult``: the first
    generation of the first prompt); None when they are not that shape."""
    if not isinstance(value, Mapping):
        return None
    generations = value.get(_GENERATIONS)
    if not isinstance(generations, list) or not generations:
        return None
    first = generations[0]
    generation = first[0] if isinstance(first, list) and first else first
    if not isinstance(generation, Mapping):
        return None
    message = _message(generation.get(_MESSAGE), ROLE_ASSISTANT)
    if message is None:
        text = generation.get(TEXT)
        if not isinstance(text, str):
            return None
        message = {ROLE: ROLE_ASSISTANT, PARTS: _text_parts(text)}
    info = generation.get(_GENERATION_INFO)
    finish = info.get(FINISH_REASON) if isinstance(info, Mapping) else None
    if isinstance(finish, str):
        message[FINISH_REASON] = finish
    return [message]
