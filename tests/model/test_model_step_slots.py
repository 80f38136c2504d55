"""Model and tool steps are built positionally on the hot path; each field keeps its slot."""

from __future__ import annotations

import json

from tracejudge import semconv as sc
from tracejudge.model.run import ModelCall, RequestedToolCall, ToolCall
from tracejudge.model.spans import STATUS_ERROR, SpanRecord
from tracejudge.model.steps import model_call_from_span, tool_call_from_span


def test_model_call_fields_land_in_their_own_slots() -> None:
    """Every ModelCall field gets a distinct value from the span; a reordered dataclass or
    a shifted positional argument would put one where another belongs."""
    out = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "t", "arguments": {"a": 1}}],
            "finish_reason": "tool_calls",
        }
    ]
    attrs = {
        sc.GEN_AI_OPERATION_NAME: "chat",
        sc.GEN_AI_PROVIDER_NAME: "prov",
        sc.GEN_AI_REQUEST_MODEL: "req-model",
        sc.GEN_AI_RESPONSE_MODEL: "resp-model",
        sc.GEN_AI_RESPONSE_ID: "resp-id",
        sc.GEN_AI_RESPONSE_FINISH_REASONS: ["stop-x"],
        sc.GEN_AI_USAGE_INPUT_TOKENS: 7,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 9,
        sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(out),
        sc.ERROR_TYPE: "err-type",
    }
    span = SpanRecord("t" * 32, "s" * 16, None, "chat", 3, 100, 200, STATUS_ERROR, "", attrs)
    got = model_call_from_span(span, [])
    assert got == ModelCall(
        span_id="s" * 16,
        operation="chat",
        provider="prov",
        request_model="req-model",
        response_model="resp-model",
        response_id="resp-id",
        finish_reasons=("stop-x",),
        input_tokens=7,
        output_tokens=9,
        input_messages=None,
        output_messages=got.output_messages,
        requested_tool_calls=[RequestedToolCall(call_id="c1", name="t", arguments={"a": 1})],
        status="error",
        error_type="err-type",
        start_ns=100,
        end_ns=200,
        attributes=attrs,
    )
    assert got.output_messages is not None
    assert got.output_messages[0]["role"] == "assistant"


def test_tool_call_fields_land_in_their_own_slots() -> None:
    """Every ToolCall field gets a distinct value from the span (inferred stays False for
    an observed call)."""
    attrs = {
        sc.GEN_AI_TOOL_NAME: "refund",
        sc.GEN_AI_TOOL_CALL_ID: "call-9",
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"x": 1}',
        sc.GEN_AI_TOOL_CALL_RESULT: '{"y": 2}',
        sc.ERROR_TYPE: "err-type",
        sc.TRACEJUDGE_TOOL_EFFECT: "write",
        sc.TRACEJUDGE_TOOL_IDEMPOTENCY_KEY: "idem",
        sc.TRACEJUDGE_APPROVAL_GRANTED: True,
    }
    span = SpanRecord(
        "t" * 32, "a" * 16, "b" * 16, "execute_tool refund", 1, 5, 6, STATUS_ERROR, "", attrs
    )
    got = tool_call_from_span(span, [])
    assert got == ToolCall(
        span_id="a" * 16,
        name="refund",
        call_id="call-9",
        arguments={"x": 1},
        arguments_is_json=True,
        result={"y": 2},
        status="error",
        error_type="err-type",
        effect="write",
        idempotency_key="idem",
        approval_granted=True,
        start_ns=5,
        end_ns=6,
        inferred=False,
        attributes=attrs,
    )
