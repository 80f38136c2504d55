"""Responses API: request attributes, input/output conversion, stream handling.

Why: newer agents call ``responses.create``; its ``function_call`` output items are the
tool calls the judge must see, and its streams carry the whole final ``Response`` in the
terminal event, which is what we record (no delta re-assembly needed).
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
    PROVIDER,
    RESPONSES_PARAMS,
    get,
    parse_arguments,
    request_attributes,
    server_of,
    usage_extra,
)

_API_TYPE: Final = {semconv.OPENAI_API_TYPE: semconv.OpenaiApiTypeValues.RESPONSES}
_TERMINAL_EVENTS: Final = frozenset(
    {"response.completed", "response.incomplete", "response.failed"}
)


def start(runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the ``chat {model}`` span for ``responses.create``."""
    attrs = request_attributes(kwargs, RESPONSES_PARAMS)
    attrs.update(_API_TYPE)
    effort = get(kwargs.get("reasoning"), "effort")
    if isinstance(effort, str):
        attrs[semconv.GEN_AI_REQUEST_REASONING_LEVEL] = effort
    if kwargs.get("stream") is True:
        attrs[semconv.GEN_AI_REQUEST_STREAM] = True
    fmt = get(get(kwargs.get("text"), "format"), "type")
    if isinstance(kwargs.get("text_format"), type):  # responses.parse(text_format=Model)
        fmt = "json_schema"
    if fmt in ("json_object", "json_schema"):
        attrs[semconv.GEN_AI_OUTPUT_TYPE] = semconv.GenAiOutputTypeValues.JSON
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
        instructions = kwargs.get("instructions")
        with runtime.guard:  # the span is open: a content bug must not leak it
            call.set_input(
                input_messages(kwargs.get("input")),
                [text_part(instructions)] if isinstance(instructions, str) else None,
                runtime.encode_static(tools, tool_definitions, call.stats)
                if isinstance(tools, (list, tuple))
                else None,
            )
    return call


def input_messages(items: Any) -> list[dict[str, Any]] | None:
    """``input=`` (a string or a list of items) → ``gen_ai.input.messages``."""
    if isinstance(items, str):
        return [message("user", [text_part(items)])]
    if not isinstance(items, (list, tuple)):
        return None
    out: list[dict[str, Any]] = []
    for item in items:
        kind = get(item, "type")
        if kind == "function_call":
            out.append(
                message(
                    "assistant",
                    [
                        tool_call_part(
                            get(item, "call_id"),
                            str(get(item, "name") or ""),
                            parse_arguments(get(item, "arguments")),
                        )
                    ],
                )
            )
        elif kind == "function_call_output":
            out.append(
                message(
                    "tool", [tool_call_response_part(get(item, "call_id"), get(item, "output"))]
                )
            )
        elif kind in (None, "message"):
            out.append(message(str(get(item, "role") or "user"), _parts(get(item, "content"))))
        else:
            out.append(message("user", [{"type": str(kind), "value": item}]))
    return out


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [text_part(content)]
    parts: list[dict[str, Any]] = []
    for p in content or ():
        kind = get(p, "type")
        if kind in ("input_text", "output_text", "text"):
            parts.append(text_part(str(get(p, "text") or "")))
        elif kind == "refusal":
            parts.append(text_part(str(get(p, "refusal") or "")))
        elif kind == "input_image" and get(p, "image_url"):
            parts.append({"type": "uri", "modality": "image", "uri": str(get(p, "image_url"))})
        else:
            parts.append({"type": str(kind or "generic"), "value": p})
    return parts


def tool_definitions(tools: Any) -> list[dict[str, Any]] | None:
    """Responses ``tools`` (flat function definitions) → FunctionToolDefinition list."""
    if not isinstance(tools, (list, tuple)):
        return None
    out: list[dict[str, Any]] = []
    for t in tools:
        kind = str(get(t, "type") or "generic")
        d: dict[str, Any] = {"type": kind, "name": str(get(t, "name") or kind)}
        if get(t, "description"):
            d["description"] = get(t, "description")
        if get(t, "parameters") is not None:
            d["parameters"] = get(t, "parameters")
        out.append(d)
    return out


def finish(call: ModelCallTelemetry, response: Any) -> None:
    """Record a ``Response`` object on the span (attributes, output messages, ledger)."""
    parts: list[dict[str, Any]] = []
    requested: list[PendingToolCall] = []
    for item in get(response, "output") or ():
        kind = get(item, "type")
        if kind == "message":
            parts.extend(_parts(get(item, "content")))
        elif kind == "function_call":
            tc = PendingToolCall(
                str(get(item, "call_id") or ""),
                str(get(item, "name") or ""),
                parse_arguments(get(item, "arguments")),
            )
            requested.append(tc)
            parts.append(tool_call_part(tc.call_id, tc.name, tc.arguments))
        elif kind == "reasoning":
            summary = [str(get(s, "text") or "") for s in get(item, "summary") or ()]
            if summary:
                parts.append({"type": "reasoning", "content": "\n".join(summary)})
    reason = _finish_reason(response, requested)
    usage = get(response, "usage")
    extra: dict[str, AttributeValue] = {}
    if usage is not None:
        extra = usage_extra(
            usage,
            ("input_tokens_details", "cached_tokens"),
            ("output_tokens_details", "reasoning_tokens"),
        )
    tier = get(response, "service_tier")
    if isinstance(tier, str):
        extra[semconv.OPENAI_RESPONSE_SERVICE_TIER] = tier
    call.set_response(
        response_id=get(response, "id"),
        response_model=get(response, "model"),
        finish_reasons=[reason],
        input_tokens=get(usage, "input_tokens"),
        output_tokens=get(usage, "output_tokens"),
        extra=extra,
    )
    out_reason = "tool_call" if reason == "tool_calls" else reason
    call.set_output([message("assistant", parts, out_reason)], requested)


def _finish_reason(response: Any, requested: list[PendingToolCall]) -> str:
    """The Responses API has a status, not finish reasons; map it to the chat vocabulary
    (``tool_calls`` when the model asked for tools, ``stop`` when completed, the
    incomplete reason such as ``max_output_tokens``, else the status)."""
    status = get(response, "status")
    if requested:
        return "tool_calls"
    if status == "completed":
        return "stop"
    reason = get(get(response, "incomplete_details"), "reason")
    if isinstance(reason, str):
        return reason
    return str(status or "error")


class ResponsesStreamAccumulator:
    """Keeps the latest ``Response`` snapshot carried by the stream's events."""

    __slots__ = ("error", "response")

    def __init__(self) -> None:
        self.response: Any = None
        self.error: str | None = None

    def add(self, event: Any) -> None:
        """Fold one stream event in."""
        kind = get(event, "type")
        if kind in _TERMINAL_EVENTS or kind in ("response.created", "response.in_progress"):
            self.response = get(event, "response")
        elif kind == "error":
            self.error = str(get(event, "code") or get(event, "message") or "error")

    def finish(self, call: ModelCallTelemetry, *, complete: bool) -> None:
        """Record the final (or latest partial) response."""
        if self.response is not None and (complete or get(self.response, "output")):
            finish(call, self.response)
            if get(self.response, "status") == "failed" and self.error is None:
                err = get(self.response, "error")
                self.error = str(get(err, "code") or "failed")
        if self.error is not None:
            # Status only: the stream state that called us ends the call.
            call.mark_error(self.error, f"stream error event: {self.error}")
