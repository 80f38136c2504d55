"""LangChain callback data → what the GenAI spans carry.

Why a module of pure functions: langchain-core hands its callback handlers plain data
and its own message objects (``AIMessage``, ``ToolMessage``, ``LLMResult``), whose
fields have moved between releases (``serialized`` is None for LangGraph's runs, the
tool-call id arrives as a keyword only in newer releases). Every read here goes
through ``get`` (a missing field reads as absent, never raises), and nothing imports
langchain-core: these functions are exercised on whatever the installed release sends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from tracejudge.instrumentation._shapes import get, parse_arguments

_BUBBLE_UP: Final = frozenset({"GraphBubbleUp", "GraphInterrupt", "ParentCommand"})
"""LangGraph's control-flow exceptions: an interrupt (human in the loop) or a command to
the parent graph passes through the runs' error callbacks without being a failure."""
_MISSING: Final = object()


def text_of(value: Any) -> str | None:
    """A non-empty string field, or None."""
    return value if isinstance(value, str) and value else None


def run_name(serialized: Any, kwargs: Mapping[str, Any], default: str) -> str:
    """A run's name: the ``name`` keyword langchain-core passes (the runnable's
    ``get_name()`` or the ``run_name`` of its config), else the serialized name or
    class path's last element, else ``default``."""
    name = text_of(kwargs.get("name")) or text_of(get(serialized, "name"))
    if name is not None:
        return name
    ids = get(serialized, "id")
    if isinstance(ids, Sequence) and not isinstance(ids, str) and ids:
        last = ids[-1]
        if isinstance(last, str) and last:
            return last
    return default


def tool_arguments(input_str: Any, inputs: Any) -> Any:
    """A tool's arguments: the ``inputs`` dict langchain-core passes (the tool call's
    arguments as the tool received them), else its input string parsed as JSON when it
    is JSON, else that string."""
    if isinstance(inputs, Mapping):
        return dict(inputs)
    return parse_arguments(input_str) if isinstance(input_str, str) else None


def tool_result(output: Any) -> Any:
    """A tool's result as recorded: a ``ToolMessage``'s content (what the model reads),
    any other return value as is. A text that is a JSON object or array is that JSON:
    langchain-core sends a tool's dict or list to the model as ``json.dumps`` of it, and
    rules read structured results by path."""
    if _is_message(output):
        output = get(output, "content")
    if isinstance(output, str) and output[:1] in ("{", "["):
        parsed = parse_arguments(output)
        if isinstance(parsed, (dict, list)):
            return parsed
    return output


def tool_message_id(output: Any) -> str | None:
    """The tool-call id a ``ToolMessage`` result answers, or None."""
    return text_of(get(output, "tool_call_id")) if _is_message(output) else None


def tool_message_failed(output: Any) -> bool:
    """Whether a tool's result is a ``ToolMessage`` marked ``status="error"`` (a tool
    error langchain handled and turned into the model's input)."""
    return _is_message(output) and get(output, "status") == "error"


def _is_message(value: Any) -> bool:
    """A langchain-core message (it has a ``type`` string and a ``content``)."""
    return isinstance(get(value, "type"), str) and get(value, "content", _MISSING) is not _MISSING


def _ai_text(message: Any) -> str | None:
    """An assistant message's text when it asked for no tool; None otherwise."""
    if get(message, "type") not in ("ai", "AIMessageChunk"):
        return None
    if get(message, "tool_calls"):
        return None
    additional = get(message, "additional_kwargs")
    if isinstance(additional, Mapping) and additional.get("tool_calls"):
        return None
    return content_text(get(message, "content"))


def content_text(content: Any) -> str | None:
    """The text of a message's content: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content or None
    if isinstance(content, Sequence):
        texts = []
        for block in content:
            if isinstance(block, str):
                texts.append(block)
            elif get(block, "type") == "text" and isinstance(get(block, "text"), str):
                texts.append(get(block, "text"))
        return "".join(texts) or None
    return None


def final_text(response: Any) -> str | None:
    """The text a model call (an ``LLMResult``) ended with when it asked for no tool —
    an answer candidate for its agent; None when it asked for tools or said nothing."""
    generations = get(response, "generations")
    if not isinstance(generations, Sequence) or not generations:
        return None
    first = generations[0]
    if not isinstance(first, Sequence) or not first:
        return None
    generation = first[0]
    message = get(generation, "message")
    if message is not None:
        return _ai_text(message)
    return text_of(get(generation, "text"))


def state_answer(outputs: Any) -> str | None:
    """The final answer in a graph's output state: the last message of its ``messages``
    channel when that is an assistant message asking for no tool (LangGraph's message
    state, which ``create_react_agent`` and ``create_agent`` return)."""
    messages = get(outputs, "messages") if isinstance(outputs, Mapping) else None
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        return None
    return _ai_text(messages[-1])


def is_control_flow(error: BaseException) -> bool:
    """Whether ``error`` is one of LangGraph's control-flow exceptions (see
    ``_BUBBLE_UP``), matched by class name so that langgraph need not be imported."""
    return any(cls.__name__ in _BUBBLE_UP for cls in type(error).__mro__)
