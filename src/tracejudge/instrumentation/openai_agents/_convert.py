"""OpenAI Agents SDK span data → what the GenAI spans carry.

Why a module of pure functions: the Agents SDK hands its processors ``SpanData``
objects whose classes and fields change between releases. Every read here goes through
``get`` (a missing field reads as absent, never raises) and keys on the data's ``type``
string, which is part of the SDK's export format, not on its classes; a span type we do
not know is simply not mapped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from tracejudge.instrumentation._shapes import get, parse_arguments

AGENT: Final = "agent"
FUNCTION: Final = "function"
HANDOFF: Final = "handoff"
GUARDRAIL: Final = "guardrail"
RESPONSE: Final = "response"
GENERATION: Final = "generation"
GROUPING: Final = frozenset({"turn", "custom"})
"""The SDK's own grouping spans inside an agent (a turn of its loop; custom spans)."""

_NOT_IDENT = re.compile(r"[^a-zA-Z0-9_]")
_SPACE = re.compile(r"\s")


def kind_of(span_data: Any) -> str | None:
    """The span data's ``type`` (``agent``, ``function``, ...), or None."""
    kind = get(span_data, "type")
    return kind if isinstance(kind, str) else None


def text_of(value: Any) -> str | None:
    """A non-empty string field, or None."""
    return value if isinstance(value, str) and value else None


def handoff_tool_name(agent_name: str) -> str:
    """The name of the transfer tool the SDK gives the model for a handoff to
    ``agent_name`` by default (``Handoff.default_tool_name``: ``transfer_to_<name>``,
    made a function-style identifier)."""
    return _NOT_IDENT.sub("_", _SPACE.sub("_", f"transfer_to_{agent_name}")).lower()


def tool_arguments(span_data: Any) -> Any:
    """A function span's arguments: the model's JSON, parsed (None when the SDK was
    told not to record sensitive data)."""
    raw = get(span_data, "input")
    return None if raw is None else parse_arguments(raw)


def tool_result(output: Any) -> Any:
    """A function span's result as recorded: the tool's return value, except that a
    string holding a JSON object or array is that JSON. Agents SDK tools return text
    (the model reads ``str()`` of whatever they return), and tools that mean structured
    data return JSON text; rules read such a result by path, as they read ``@tool``
    results that are dicts. Any other string stays a string."""
    if isinstance(output, str) and output[:1] in ("{", "["):
        parsed = parse_arguments(output)
        if isinstance(parsed, (dict, list)):
            return parsed
    return output


def error_description(error: Any) -> str | None:
    """The text of an SDK ``SpanError`` (``{"message", "data"}``), or None."""
    if not isinstance(error, Mapping):
        return None
    message = text_of(error.get("message")) or "error"
    data = error.get("data")
    detail = data.get("error") if isinstance(data, Mapping) else None
    return f"{message}: {detail}" if isinstance(detail, str) and detail else message


def final_text(kind: str, span_data: Any) -> str | None:
    """The assistant text a model call ended with when it asked for no tool, i.e. an
    answer candidate for its agent; None when it asked for tools or said nothing.

    ``response`` spans carry the Responses API ``Response``; ``generation`` spans the
    chat-completions output messages, or (streamed) the ``Response`` the SDK assembled,
    as a dict — only when the SDK records sensitive data.
    """
    if kind == RESPONSE:
        return _response_text(get(span_data, "response"))
    if kind == GENERATION:
        output = get(span_data, "output")
        if not isinstance(output, (list, tuple)) or not output:
            return None
        last = output[-1]
        if isinstance(get(last, "output"), (list, tuple)):  # a streamed call's Response
            return _response_text(last)
        if get(last, "tool_calls"):
            return None
        return text_of(get(last, "content"))
    return None


def _response_text(response: Any) -> str | None:
    texts: list[str] = []
    for item in get(response, "output") or ():
        item_type = get(item, "type")
        if item_type == "message":
            for part in get(item, "content") or ():
                if get(part, "type") == "output_text":
                    texts.append(str(get(part, "text") or ""))
        elif item_type not in ("reasoning", None):
            return None  # a function call (or another tool): not the final answer
    return "".join(texts) or None
