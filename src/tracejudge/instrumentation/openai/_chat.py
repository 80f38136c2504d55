"""Chat Completions: request attributes, message conversion, response and stream handling.

Why: ``chat.completions.create`` is where most agents ask the model for tool calls; the
judge needs the requested calls (``tool_call`` parts with ids) and the final text in the
conventions' message JSON, for plain responses and for streams alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv
from tracejudge.instrumentation._context import PendingToolCall
from tracejudge.instrumentation._genai import (
    ModelCallTelemetry,
    message,
    text_part,
    tool_call_part,
    tool_call_response_part,
)
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation.openai._common import (
    CHAT_PARAMS,
    PROVIDER,
    get,
    parse_arguments,
    request_attributes,
    server_of,
    usage_extra,
)

_API_TYPE: Final = {semconv.OPENAI_API_TYPE: semconv.OpenaiApiTypeValues.CHAT_COMPLETIONS}
_FINISH_TO_PART: Final = {"tool_calls": "tool_call", "function_call": "tool_call"}


def start(runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the ``chat {model}`` span from the keyword arguments of ``create``."""
    attrs = request_attributes(kwargs, CHAT_PARAMS)
    attrs.update(_API_TYPE)
    n = kwargs.get("n")
    if isinstance(n, int) and not isinstance(n, bool) and n != 1:
        attrs[semconv.GEN_AI_REQUEST_CHOICE_COUNT] = n
    stop = kwargs.get("stop")
    if isinstance(stop, str):
        attrs[semconv.GEN_AI_REQUEST_STOP_SEQUENCES] = (stop,)
    elif isinstance(stop, (list, tuple)):
        attrs[semconv.GEN_AI_REQUEST_STOP_SEQUENCES] = tuple(str(s) for s in stop)
    if kwargs.get("stream") is True:
        attrs[semconv.GEN_AI_REQUEST_STREAM] = True
    response_format = kwargs.get("response_format")
    fmt = "json_schema" if isinstance(response_format, type) else get(response_format, "type")
    if fmt in ("json_object", "json_schema"):
        attrs[semconv.GEN_AI_OUTPUT_TYPE] = semconv.GenAiOutputTypeValues.JSON
    elif fmt == "text":
        attrs[semconv.GEN_AI_OUTPUT_TYPE] = semconv.GenAiOutputTypeValues.TEXT
    model = kwargs.get("model")
    address, port = server_of(resource)
    call = ModelCallTelemetry(
        runtime,
        semconv.GenAiOperationNameValues.CHAT,
        PROVIDER,
        model if isinstance(model, str) else None,
        attrs,
        address,
        port,
        tools := kwargs.get("tools"),
    )
    if runtime.capture_any:
        with runtime.guard:  # the span is open: a content bug must not leak it
            call.set_input(
                input_messages(kwargs.get("messages")),
                None,
                runtime.encode_static(tools, tool_definitions, call.stats)
                if isinstance(tools, (list, tuple))
                else None,
            )
    return call


# --- content conversion ------------------------------------------------------------


def input_messages(messages: Any) -> list[dict[str, Any]] | None:
    """OpenAI chat messages → ``gen_ai.input.messages`` (system messages stay in order)."""
    if not isinstance(messages, (list, tuple)):
        return None
    out: list[dict[str, Any]] = []
    for m in messages:
        role = str(get(m, "role") or "user")
        parts: list[dict[str, Any]] = []
        content = get(m, "content")
        if role == "tool":
            parts.append(tool_call_response_part(get(m, "tool_call_id"), _flatten(content)))
        else:
            parts.extend(_content_parts(content))
        for tc in get(m, "tool_calls") or ():
            fn = get(tc, "function")
            parts.append(
                tool_call_part(
                    get(tc, "id"), str(get(fn, "name") or ""), parse_arguments(get(fn, "arguments"))
                )
            )
        msg = message(role, parts)
        name = get(m, "name")
        if isinstance(name, str):
            msg["name"] = name
        out.append(msg)
    return out


def _content_parts(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [text_part(content)]
    parts: list[dict[str, Any]] = []
    for p in content if isinstance(content, (list, tuple)) else (content,):
        kind = get(p, "type")
        if kind == "text":
            parts.append(text_part(str(get(p, "text") or "")))
        elif kind == "image_url":
            url = get(get(p, "image_url"), "url")
            parts.append({"type": "uri", "modality": "image", "uri": str(url)})
        elif kind == "input_audio":
            audio = get(p, "input_audio")
            parts.append(
                {
                    "type": "blob",
                    "modality": "audio",
                    "content": get(audio, "data"),
                    "mime_type": f"audio/{get(audio, 'format')}",
                }
            )
        elif kind == "refusal":
            parts.append(text_part(str(get(p, "refusal") or "")))
        else:
            parts.append({"type": str(kind or "generic"), "value": p})
    return parts


def _flatten(content: Any) -> Any:
    """Tool-message content: a string, or the concatenated text parts."""
    if isinstance(content, (list, tuple)):
        texts = [str(get(p, "text")) for p in content if get(p, "type") == "text"]
        return "".join(texts) if texts else content
    return content


def tool_definitions(tools: Any) -> list[dict[str, Any]] | None:
    """``tools=[{"type": "function", "function": {...}}]`` → FunctionToolDefinition list."""
    if not isinstance(tools, (list, tuple)):
        return None
    out: list[dict[str, Any]] = []
    for t in tools:
        fn = get(t, "function")
        if fn is None:
            out.append({"type": str(get(t, "type") or "generic"), "name": str(get(t, "type"))})
            continue
        d: dict[str, Any] = {"type": "function", "name": str(get(fn, "name") or "")}
        if get(fn, "description"):
            d["description"] = get(fn, "description")
        if get(fn, "parameters") is not None:
            d["parameters"] = get(fn, "parameters")
        out.append(d)
    return out


def _output(
    role: str, text: str | None, calls: list[PendingToolCall], finish: str | None
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if text:
        parts.append(text_part(text))
    for c in calls:
        parts.append(tool_call_part(c.call_id, c.name, c.arguments))
    reason = _FINISH_TO_PART.get(finish, finish) if finish else None
    return message(role, parts, reason)


# --- responses ----------------------------------------------------------------------


def finish(call: ModelCallTelemetry, completion: Any) -> None:
    """Record a ``ChatCompletion`` on the span (attributes, output messages, ledger).

    The completion is always an SDK model here, so plain ``getattr`` (the hot path).
    """
    choices = getattr(completion, "choices", None) or ()
    reasons: list[str] = []
    messages: list[dict[str, Any]] = []
    requested: list[PendingToolCall] = []
    want_text = call.runtime.capture_any
    for choice in choices:
        reason = getattr(choice, "finish_reason", None)
        reasons.append(str(reason) if reason else "error")
        msg = getattr(choice, "message", None)
        calls: list[PendingToolCall] = []
        for tc in getattr(msg, "tool_calls", None) or ():
            fn = getattr(tc, "function", None)
            calls.append(
                PendingToolCall(
                    str(getattr(tc, "id", None) or ""),
                    str(getattr(fn, "name", None) or ""),
                    parse_arguments(getattr(fn, "arguments", None)),
                )
            )
        if want_text or calls:  # NO_CONTENT and no tool calls: nothing will be recorded
            text = (
                getattr(msg, "content", None) or getattr(msg, "refusal", None)
                if want_text
                else None
            )
            messages.append(
                _output(str(getattr(msg, "role", None) or "assistant"), text, calls, reason)
            )
        requested.extend(calls)
    usage = getattr(completion, "usage", None)
    extra: dict[str, AttributeValue] = {}
    if usage is not None:
        extra = usage_extra(
            usage,
            ("prompt_tokens_details", "cached_tokens"),
            ("completion_tokens_details", "reasoning_tokens"),
        )
    _openai_extra(extra, completion)
    call.set_response(
        response_id=getattr(completion, "id", None),
        response_model=getattr(completion, "model", None),
        finish_reasons=reasons,
        input_tokens=getattr(usage, "prompt_tokens", None),
        output_tokens=getattr(usage, "completion_tokens", None),
        extra=extra,
    )
    call.set_output(messages, requested)


def _openai_extra(extra: dict[str, AttributeValue], obj: Any) -> None:
    tier = getattr(obj, "service_tier", None)
    if isinstance(tier, str):
        extra[semconv.OPENAI_RESPONSE_SERVICE_TIER] = tier
    fingerprint = getattr(obj, "system_fingerprint", None)
    if isinstance(fingerprint, str):
        extra[semconv.OPENAI_RESPONSE_SYSTEM_FINGERPRINT] = fingerprint


class ChatStreamAccumulator:
    """Rebuilds choices, tool calls and usage from ``ChatCompletionChunk``s."""

    __slots__ = ("_choices", "extra", "id", "model", "usage")

    def __init__(self) -> None:
        self.id: str | None = None
        self.model: str | None = None
        self.usage: Any = None
        self.extra: dict[str, AttributeValue] = {}
        # index -> [role, text pieces, {tc index: [id, name, arg pieces]}, finish_reason]
        self._choices: dict[int, list[Any]] = {}

    def add(self, chunk: Any) -> None:
        """Fold one chunk in."""
        if self.id is None:
            self.id = get(chunk, "id")
            self.model = get(chunk, "model")
            _openai_extra(self.extra, chunk)
        usage = get(chunk, "usage")
        if usage is not None:
            self.usage = usage
        for choice in get(chunk, "choices") or ():
            idx = get(choice, "index") or 0
            state = self._choices.get(idx)
            if state is None:
                state = self._choices[idx] = ["assistant", [], {}, None]
            delta = get(choice, "delta")
            if delta is not None:
                role = get(delta, "role")
                if role:
                    state[0] = role
                content = get(delta, "content")
                if content:
                    state[1].append(content)
                for tc in get(delta, "tool_calls") or ():
                    tci = get(tc, "index") or 0
                    slot = state[2].get(tci)
                    if slot is None:
                        slot = state[2][tci] = [None, "", []]
                    if get(tc, "id"):
                        slot[0] = get(tc, "id")
                    fn = get(tc, "function")
                    if fn is not None:
                        if get(fn, "name"):
                            slot[1] = get(fn, "name")
                        if get(fn, "arguments"):
                            slot[2].append(get(fn, "arguments"))
            reason = get(choice, "finish_reason")
            if reason:
                state[3] = reason

    def finish(self, call: ModelCallTelemetry, *, complete: bool) -> None:
        """Record what was accumulated; ``complete`` is False for an abandoned stream."""
        messages: list[dict[str, Any]] = []
        requested: list[PendingToolCall] = []
        reasons: list[str] = []
        for idx in sorted(self._choices):
            role, texts, tcs, reason = self._choices[idx]
            calls = [
                PendingToolCall(
                    str(tcs[i][0] or ""), str(tcs[i][1]), parse_arguments("".join(tcs[i][2]))
                )
                for i in sorted(tcs)
            ]
            requested.extend(calls)
            if reason or complete:
                reasons.append(str(reason) if reason else "error")
            messages.append(_output(role, "".join(texts), calls, reason))
        usage = self.usage
        extra = dict(self.extra)
        if usage is not None:
            extra.update(
                usage_extra(
                    usage,
                    ("prompt_tokens_details", "cached_tokens"),
                    ("completion_tokens_details", "reasoning_tokens"),
                )
            )
        call.set_response(
            response_id=self.id,
            response_model=self.model,
            finish_reasons=reasons,
            input_tokens=get(usage, "prompt_tokens"),
            output_tokens=get(usage, "completion_tokens"),
            extra=extra,
        )
        if messages:
            call.set_output(messages, requested, record_tool_calls=complete)
