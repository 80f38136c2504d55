"""What one span is (agent, model call, tool execution) and the step it becomes.

Four instrumentation flavours describe the same things with different keys: the current
GenAI conventions (``gen_ai.operation.name``), their older event form (``gen_ai.system``,
message events), OpenInference (``openinference.span.kind``, ``llm.*``, ``tool.*``,
``input.value``/``output.value``) and OpenLLMetry (``traceloop.span.kind``,
``traceloop.entity.*``, ``gen_ai.prompt.N.*``). The GenAI keys win when present; the
others fill what is missing. Where a tool execution's arguments, result and status are
is the reader table's business (``readers``: one row per framework that emits its
own spans — pydantic-ai, Google ADK, Strands...), not this module's. Problems with
the evidence are returned as notes, never raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

from tracejudge import semconv as sc
from tracejudge.model.messages import (
    ARGUMENTS,
    FINISH_REASON,
    ID,
    NAME,
    ROLE_ASSISTANT,
    ROLE_USER,
    messages_from_events,
    messages_from_indexed,
    messages_from_openinference,
    normalize_messages,
    parse_json_text,
    tool_call_parts,
)
from tracejudge.model.readers import NOT_EXECUTIONS, read_tool_evidence
from tracejudge.model.run import (
    ModelCall,
    Note,
    RequestedToolCall,
    StepStatus,
    ToolCall,
    ToolEffect,
)
from tracejudge.model.spans import STATUS_ERROR, STATUS_OK, SpanRecord
from tracejudge.model.vendor_models import model_reader_of, read_messages

__all__ = ["SpanRole", "classify", "model_call_from_span", "tool_call_from_span"]

SpanRole: TypeAlias = Literal["agent", "model", "tool", "other"]

_OP = sc.GenAiOperationNameValues
_MODEL_OPS = {_OP.CHAT, _OP.TEXT_COMPLETION, _OP.GENERATE_CONTENT, _OP.EMBEDDINGS}
# OpenInference span kinds (openinference.span.kind values).
_OI_MODEL = {"LLM": _OP.CHAT, "EMBEDDING": _OP.EMBEDDINGS}
_OI_TOOL = "TOOL"
_OI_AGENT = "AGENT"
# OpenLLMetry values (traceloop.span.kind, llm.request.type).
_TL_TOOL = "tool"
_TL_AGENT = TRACELOOP_AGENT = "agent"
_TL_REQUEST_TYPES = {
    "chat": _OP.CHAT,
    "completion": _OP.TEXT_COMPLETION,
    "embedding": _OP.EMBEDDINGS,
}
_EFFECTS: dict[str, ToolEffect] = {
    "read": "read",
    "write": "write",
    "notify": "notify",
    "unknown": "unknown",
}
# Span-name decorations of tool spans: "execute_tool {name}" (GenAI), "{name}.tool" (OpenLLMetry).
_TOOL_NAME_PREFIX = _OP.EXECUTE_TOOL + " "
_TL_TOOL_SUFFIX = "." + _TL_TOOL
# Explicit failure flags in a tool result (MCP CallToolResult.isError, Anthropic
# tool_result.is_error, {"error": ...}, {"success": false}, {"ok": false}).
_ERROR_TRUE_FLAGS = ("isError", "is_error")
_ERROR_VALUE_FLAG = "error"
_OK_FALSE_FLAGS = ("success", "ok")
_TOOL_ERROR = "tool_error"  # the error.type MCP uses for CallToolResult.isError


def _text(value: Any) -> str:
    """A string attribute, or "" when missing or of another type (never unhashable)."""
    return value if isinstance(value, str) else ""


def _upper(value: Any) -> str:
    return value.upper() if isinstance(value, str) else ""


def classify(span: SpanRecord) -> SpanRole:
    """Decide what a span is, from whichever flavour's keys it carries."""
    attrs = span.attributes
    op = _text(attrs.get(sc.GEN_AI_OPERATION_NAME))
    if op == _OP.INVOKE_AGENT:
        return "agent"
    if op in _MODEL_OPS:
        return "model"
    if op == _OP.EXECUTE_TOOL:
        # A span that only repeats executions recorded by their own spans is no step.
        return "other" if _text(attrs.get(sc.GEN_AI_TOOL_NAME)) in NOT_EXECUTIONS else "tool"
    oi_kind = _upper(attrs.get(sc.FOREIGN_OPENINFERENCE_SPAN_KIND))
    tl_kind = attrs.get(sc.FOREIGN_TRACELOOP_SPAN_KIND)
    if oi_kind == _OI_AGENT or tl_kind == _TL_AGENT:
        return "agent"
    if oi_kind == _OI_TOOL or tl_kind == _TL_TOOL:
        return "tool"
    if op:
        return "other"  # a GenAI operation we do not judge as a step (retrieval, plan...)
    if oi_kind in _OI_MODEL or _text(attrs.get(sc.FOREIGN_LLM_REQUEST_TYPE)) in _TL_REQUEST_TYPES:
        return "model"
    if model_reader_of(span) is not None:  # a framework's model call in vendor attributes
        return "model"
    return "other"


def _first(attrs: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value is not None and value != "":
            return value
    return None


def _str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _status(span: SpanRecord) -> StepStatus:
    if span.status_code == STATUS_ERROR:
        return "error"
    if span.status_code == STATUS_OK:
        return "ok"
    return "unset"


def _error_type(span: SpanRecord) -> str | None:
    value = _str(span.attributes.get(sc.ERROR_TYPE))
    if value:
        return value
    for event in span.events:
        if event.name == sc.EVENT_EXCEPTION:
            found = _str(event.attributes.get(sc.EXCEPTION_TYPE))
            if found:
                return found
    return None


def _operation(span: SpanRecord) -> str:
    attrs = span.attributes
    op = _text(attrs.get(sc.GEN_AI_OPERATION_NAME))
    if op:
        return op
    oi = _OI_MODEL.get(_upper(attrs.get(sc.FOREIGN_OPENINFERENCE_SPAN_KIND)))
    if oi is not None:
        return oi
    reader = model_reader_of(span)
    if reader is not None:
        return reader.operation
    return _TL_REQUEST_TYPES.get(_text(attrs.get(sc.FOREIGN_LLM_REQUEST_TYPE)), _OP.CHAT)


_FLATTENED_HEADS = tuple(
    p + "."
    for p in (
        sc.FOREIGN_LLM_INPUT_MESSAGES,
        sc.FOREIGN_LLM_OUTPUT_MESSAGES,
        sc.FOREIGN_GEN_AI_PROMPT,
        sc.FOREIGN_GEN_AI_COMPLETION,
    )
)


def _has_flattened(attrs: Mapping[str, Any]) -> bool:
    heads = _FLATTENED_HEADS
    return any(key.startswith(heads) for key in attrs)


def _messages(
    span: SpanRecord, notes: list[Note]
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    attrs = span.attributes
    inputs = _genai_messages(span, sc.GEN_AI_INPUT_MESSAGES, ROLE_USER, notes)
    outputs = _genai_messages(span, sc.GEN_AI_OUTPUT_MESSAGES, ROLE_ASSISTANT, notes)
    # The flattened forms need a scan of every key each; one scan first says whether any
    # flattened key is there at all (GenAI spans with one side uncaptured have none).
    if (inputs is None or outputs is None) and _has_flattened(attrs):
        if inputs is None:
            inputs = messages_from_openinference(attrs, sc.FOREIGN_LLM_INPUT_MESSAGES, ROLE_USER)
        if outputs is None:
            outputs = messages_from_openinference(
                attrs, sc.FOREIGN_LLM_OUTPUT_MESSAGES, ROLE_ASSISTANT
            )
        if inputs is None:
            inputs = messages_from_indexed(attrs, sc.FOREIGN_GEN_AI_PROMPT, ROLE_USER)
        if outputs is None:
            outputs = messages_from_indexed(attrs, sc.FOREIGN_GEN_AI_COMPLETION, ROLE_ASSISTANT)
    # The oldest form: the whole prompt/completion as one JSON attribute.
    if inputs is None:
        inputs = normalize_messages(attrs.get(sc.FOREIGN_GEN_AI_PROMPT), ROLE_USER)
    if outputs is None:
        outputs = normalize_messages(attrs.get(sc.FOREIGN_GEN_AI_COMPLETION), ROLE_ASSISTANT)
    if (inputs is None or outputs is None) and span.events:
        ev_in, ev_out = messages_from_events(span.events)
        inputs = inputs if inputs is not None else ev_in
        outputs = outputs if outputs is not None else ev_out
    if inputs is None or outputs is None:
        reader = model_reader_of(span)
        if reader is not None:
            vendor_in, vendor_out = read_messages(reader, span)
            inputs = inputs if inputs is not None else vendor_in
            outputs = outputs if outputs is not None else vendor_out
    return inputs, outputs


def _genai_messages(
    span: SpanRecord, key: str, role: str, notes: list[Note]
) -> list[dict[str, Any]] | None:
    raw = span.attributes.get(key)
    if raw is None:
        return None
    found = normalize_messages(raw, role)
    if found is None:
        notes.append(
            Note(
                "bad_messages",
                (span.span_id,),
                f"span {span.span_id}: {key} is not a JSON list of messages; ignored",
            )
        )
    return found


def _parsed_or_text(value: Any) -> Any:
    parsed, _ = parse_json_text(value)
    return parsed


def model_call_from_span(span: SpanRecord, notes: list[Note]) -> ModelCall:
    """The model call a span records; evidence problems are appended to ``notes``."""
    attrs = span.attributes
    inputs, outputs = _messages(span, notes)
    requested = [
        RequestedToolCall(
            call_id=_str(part.get(ID)),
            name=str(part.get(NAME)),
            arguments=_parsed_or_text(part.get(ARGUMENTS)),
        )
        for part in tool_call_parts(outputs)
    ]
    finish = attrs.get(sc.GEN_AI_RESPONSE_FINISH_REASONS)
    if isinstance(finish, str):
        finish = [finish]
    if not isinstance(finish, list):
        finish = [m[FINISH_REASON] for m in outputs or [] if FINISH_REASON in m]
    model_name = _str(attrs.get(sc.FOREIGN_LLM_MODEL_NAME))
    # Positional, in ModelCall's field order (one call per model span on the collector's
    # hot path: 0.34 instead of 0.88 us with keywords); tests pin each field's slot.
    return ModelCall(
        span.span_id,  # span_id
        _operation(span),  # operation
        _str(  # provider
            _first(
                attrs,
                sc.GEN_AI_PROVIDER_NAME,
                sc.FOREIGN_GEN_AI_SYSTEM,
                sc.FOREIGN_LLM_PROVIDER,
                sc.FOREIGN_LLM_SYSTEM,
            )
        ),
        _str(attrs.get(sc.GEN_AI_REQUEST_MODEL)) or model_name,  # request_model
        _str(attrs.get(sc.GEN_AI_RESPONSE_MODEL)) or model_name,  # response_model
        _str(attrs.get(sc.GEN_AI_RESPONSE_ID)),  # response_id
        tuple(str(f) for f in finish),  # finish_reasons
        _int(  # input_tokens
            _first(
                attrs,
                sc.GEN_AI_USAGE_INPUT_TOKENS,
                sc.FOREIGN_GEN_AI_USAGE_PROMPT_TOKENS,
                sc.FOREIGN_LLM_TOKEN_COUNT_PROMPT,
            )
        ),
        _int(  # output_tokens
            _first(
                attrs,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS,
                sc.FOREIGN_GEN_AI_USAGE_COMPLETION_TOKENS,
                sc.FOREIGN_LLM_TOKEN_COUNT_COMPLETION,
            )
        ),
        inputs,  # input_messages
        outputs,  # output_messages
        requested,  # requested_tool_calls
        _status(span),  # status
        _error_type(span),  # error_type
        span.start_ns,  # start_ns
        span.end_ns,  # end_ns
        attrs,  # attributes
    )


def _tool_name(span: SpanRecord) -> str:
    attrs = span.attributes
    name = _first(attrs, sc.GEN_AI_TOOL_NAME, sc.FOREIGN_TOOL_NAME)
    if name is None and attrs.get(sc.FOREIGN_TRACELOOP_SPAN_KIND) == _TL_TOOL:
        name = attrs.get(sc.FOREIGN_TRACELOOP_ENTITY_NAME)
    if name is not None:
        return str(name)
    if span.name.startswith(_TOOL_NAME_PREFIX):
        return span.name[len(_TOOL_NAME_PREFIX) :]
    if span.name.endswith(_TL_TOOL_SUFFIX):
        return span.name[: -len(_TL_TOOL_SUFFIX)]
    return span.name


def _unwrap_traceloop_input(value: Any) -> Any:
    """OpenLLMetry records decorator input as ``{"args": [...], "kwargs": {...}}``; a call
    with keyword arguments only is judged by its kwargs."""
    if isinstance(value, dict) and set(value) == {"args", "kwargs"} and not value["args"]:
        return value["kwargs"]
    return value


def _result_error_flag(result: Any) -> str | None:
    if not isinstance(result, Mapping):
        return None
    for key in _ERROR_TRUE_FLAGS:
        if result.get(key) is True:
            return key
    err = result.get(_ERROR_VALUE_FLAG)
    if err not in (None, False, "", {}, []):
        return _ERROR_VALUE_FLAG
    for key in _OK_FALSE_FLAGS:
        if result.get(key) is False:
            return key
    return None


def tool_call_from_span(span: SpanRecord, notes: list[Note]) -> ToolCall:
    """The tool execution a span records; evidence problems are appended to ``notes``.

    Status: span status ERROR -> "error". A result that explicitly reports failure
    (``isError``/``is_error`` true, a non-empty ``error``, ``success``/``ok`` false) is also
    counted as "error" (``error.type`` ``tool_error``) even when the span says OK: a tool
    that said it failed did not do its job, and judging it as done would pass runs that
    only sound right. A note records each such case.
    """
    attrs = span.attributes
    name = _tool_name(span)
    evidence = read_tool_evidence(span)
    args, args_json = parse_json_text(evidence.arguments)
    if evidence.kwargs_input:
        args = _unwrap_traceloop_input(args)
    if not args_json:
        notes.append(
            Note(
                "args_not_json",
                (span.span_id,),
                f"tool {name} (span {span.span_id}): arguments are not JSON; kept as text",
            )
        )
    result, _ = parse_json_text(evidence.result)
    status = _status(span)
    error_type = _error_type(span)
    if evidence.failed and status != "error":
        status = "error"
        error_type = error_type or _TOOL_ERROR
    flag = _result_error_flag(result)
    if flag is not None and status != "error":
        status = "error"
        error_type = error_type or _TOOL_ERROR
        notes.append(
            Note(
                "result_error",
                (span.span_id,),
                f"tool {name} (span {span.span_id}): result reports failure ({flag}); "
                "counted as error",
            )
        )
    effect_raw = attrs.get(sc.TRACEJUDGE_TOOL_EFFECT)
    effect = _EFFECTS.get(effect_raw, "unknown") if isinstance(effect_raw, str) else "unknown"
    if isinstance(effect_raw, str) and effect_raw not in _EFFECTS:
        notes.append(
            Note(
                "unknown_effect",
                (span.span_id,),
                f"tool {name} (span {span.span_id}): unknown effect {effect_raw!r}",
            )
        )
    approval = attrs.get(sc.TRACEJUDGE_APPROVAL_GRANTED)
    if isinstance(approval, str):
        approval = {"true": True, "false": False}.get(approval.lower())
    # Positional, in ToolCall's field order (0.29 instead of 0.69 us with keywords, once
    # per tool span); tests pin each field's slot.
    return ToolCall(
        span.span_id,  # span_id
        name,  # name
        _str(_first(attrs, sc.GEN_AI_TOOL_CALL_ID, sc.FOREIGN_TOOL_CALL_ID)),  # call_id
        args,  # arguments
        args_json,  # arguments_is_json
        result,  # result
        status,  # status
        error_type,  # error_type
        effect,  # effect
        _str(attrs.get(sc.TRACEJUDGE_TOOL_IDEMPOTENCY_KEY)),  # idempotency_key
        approval if isinstance(approval, bool) else None,  # approval_granted
        span.start_ns,  # start_ns
        span.end_ns,  # end_ns
        False,  # inferred
        attrs,  # attributes
    )


def inferred_result_error(result: Any) -> str | None:
    """The explicit failure flag in a tool result, if any (shared with inferred calls)."""
    return _result_error_flag(result)
