"""Scripts for the scripted model server: what the "model" says next, given the conversation.

A script is a list of steps. The step to play is chosen by how many assistant turns the
conversation already holds, so the server keeps no state between requests and the same
conversation always gets the same answer. A step sees the conversation (including the
results of the tools the agent ran), so a scripted model can act on what a lookup really
returned, like a real model would, instead of replaying fixed arguments.

The types here are provider-neutral: the server renders a ``Reply`` as an OpenAI Chat
Completions or an Anthropic Messages response, and parses either request shape into a
``Conversation``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias


class ScriptError(Exception):
    """The script cannot answer this conversation (exhausted, or a step failed)."""


@dataclass(slots=True, frozen=True)
class ToolRequest:
    """A tool call the scripted model asks for."""

    name: str
    arguments: dict[str, Any]


@dataclass(slots=True, frozen=True)
class Reply:
    """One assistant turn: text, tool calls, or both."""

    text: str | None = None
    tool_calls: tuple[ToolRequest, ...] = ()


@dataclass(slots=True, frozen=True)
class ToolResult:
    """A tool result the agent fed back, paired with the call that asked for it."""

    call_id: str
    name: str
    arguments: Any
    result: Any
    """Parsed JSON when the content was JSON, else the raw text."""


@dataclass(slots=True, frozen=True)
class Conversation:
    """The conversation so far, as the scripted model sees it."""

    turn: int
    """Number of assistant turns already in the conversation (the index of the step to play)."""
    user_text: str
    """The text of the first user message."""
    tool_results: tuple[ToolResult, ...] = ()

    def result_of(self, tool: str) -> Any:
        """The result of the latest call of ``tool``; ScriptError when it was never called."""
        for item in reversed(self.tool_results):
            if item.name == tool:
                return item.result
        raise ScriptError(f"the script needs a result of {tool!r}, but the agent never sent one")


Step: TypeAlias = Callable[[Conversation], Reply]
"""One scripted turn: read the conversation, say what the model answers."""


@dataclass(slots=True, frozen=True)
class Script:
    """A named sequence of steps (one scripted agent variant)."""

    name: str
    steps: Sequence[Step]
    model: str = "gpt-4o-mini-2024-07-18"
    """The model name the server reports in responses."""
    meta: Mapping[str, str] = field(default_factory=dict)

    def reply(self, conversation: Conversation) -> Reply:
        """Play the step for this conversation's turn."""
        if conversation.turn >= len(self.steps):
            raise ScriptError(
                f"script {self.name!r} has {len(self.steps)} steps; the conversation asks "
                f"for turn {conversation.turn + 1}"
            )
        return self.steps[conversation.turn](conversation)


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _text_of(content: Any) -> str:
    """Text of an OpenAI/Anthropic message ``content`` (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _first_user_text(messages: Sequence[Any]) -> str:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def openai_conversation(body: Mapping[str, Any]) -> Conversation:
    """Parse an OpenAI Chat Completions request body into a ``Conversation``."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise ValueError("'messages' must be a list")
    calls: dict[str, tuple[str, Any]] = {}
    results: list[ToolResult] = []
    turn = 0
    for message in messages:
        if not isinstance(message, dict):
            raise ValueError("every message must be an object")
        role = message.get("role")
        if role == "assistant":
            turn += 1
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                calls[str(call.get("id"))] = (
                    str(function.get("name")),
                    _parse_json(str(function.get("arguments", ""))),
                )
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            name, arguments = calls.get(call_id, ("", None))
            results.append(
                ToolResult(call_id, name, arguments, _parse_json(_text_of(message.get("content"))))
            )
    return Conversation(
        turn=turn, user_text=_first_user_text(messages), tool_results=tuple(results)
    )


def anthropic_conversation(body: Mapping[str, Any]) -> Conversation:
    """Parse an Anthropic Messages request body into a ``Conversation``."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise ValueError("'messages' must be a list")
    calls: dict[str, tuple[str, Any]] = {}
    results: list[ToolResult] = []
    turn = 0
    for message in messages:
        if not isinstance(message, dict):
            raise ValueError("every message must be an object")
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "assistant":
            turn += 1
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls[str(block.get("id"))] = (str(block.get("name")), block.get("input"))
        else:
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    call_id = str(block.get("tool_use_id"))
                    name, arguments = calls.get(call_id, ("", None))
                    text = _text_of(block.get("content"))
                    results.append(ToolResult(call_id, name, arguments, _parse_json(text)))
    return Conversation(
        turn=turn, user_text=_first_user_text(messages), tool_results=tuple(results)
    )


def _parsed_result(value: Any) -> Any:
    """A tool result sent back as JSON data or as text: the data either way."""
    return _parse_json(value) if isinstance(value, str) else value


def bedrock_conversation(body: Mapping[str, Any]) -> Conversation:
    """Parse a Bedrock Converse request body into a ``Conversation``."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise ValueError("'messages' must be a list")
    calls: dict[str, tuple[str, Any]] = {}
    results: list[ToolResult] = []
    turn, user_text = 0, ""
    for message in messages:
        if not isinstance(message, dict):
            raise ValueError("every message must be an object")
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if message.get("role") == "assistant":
            turn += 1
            for use in (b["toolUse"] for b in blocks if isinstance(b.get("toolUse"), dict)):
                calls[str(use.get("toolUseId"))] = (str(use.get("name")), use.get("input"))
            continue
        if not user_text:
            user_text = "".join(str(b["text"]) for b in blocks if isinstance(b.get("text"), str))
        for result in (b["toolResult"] for b in blocks if isinstance(b.get("toolResult"), dict)):
            call_id = str(result.get("toolUseId"))
            name, arguments = calls.get(call_id, ("", None))
            parts = [p for p in result.get("content") or [] if isinstance(p, dict)]
            value: Any = "".join(str(p.get("text", "")) for p in parts)
            if len(parts) == 1 and "json" in parts[0]:
                value = parts[0]["json"]
            results.append(ToolResult(call_id, name, arguments, _parsed_result(value)))
    return Conversation(turn=turn, user_text=user_text, tool_results=tuple(results))


def gemini_conversation(body: Mapping[str, Any]) -> Conversation:
    """Parse a Gemini ``generateContent`` request body into a ``Conversation`` (a function
    response is paired with its call by id, else by name)."""
    contents = body.get("contents")
    if not isinstance(contents, list):
        raise ValueError("'contents' must be a list")
    calls: dict[str, tuple[str, Any]] = {}
    results: list[ToolResult] = []
    turn, user_text = 0, ""
    for content in contents:
        if not isinstance(content, dict):
            raise ValueError("every content must be an object")
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        if content.get("role") == "model":
            turn += 1
            for call in (
                p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)
            ):
                key = str(call.get("id") or call.get("name"))
                calls[key] = (str(call.get("name")), call.get("args"))
            continue
        if not user_text:
            user_text = "".join(str(p["text"]) for p in parts if isinstance(p.get("text"), str))
        for answer in (
            p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)
        ):
            key = str(answer.get("id") or answer.get("name"))
            name, arguments = calls.get(key, (str(answer.get("name")), None))
            response = answer.get("response")
            if isinstance(response, dict) and set(response) == {"result"}:
                response = response["result"]  # the SDK's wrapping of a non-object result
            results.append(ToolResult(key, name, arguments, _parsed_result(response)))
    return Conversation(turn=turn, user_text=user_text, tool_results=tuple(results))
