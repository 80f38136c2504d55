"""Bedrock reads each response once: the tool calls handed to the ledger take their ids,
names and arguments from the converted output parts (``requested_calls``) instead of
reading and converting the response a second time; and the request attributes skip
the parameter groups a call leaves out. Both must read what the direct readings read."""

from __future__ import annotations

from typing import Any

import pytest

from tracejudge import semconv as sc
from tracejudge.instrumentation.bedrock import _convert as cv
from tracejudge.instrumentation.bedrock._patch import requested_calls, tool_calls_of


def _response(*blocks: Any) -> dict[str, Any]:
    return {"output": {"message": {"role": "assistant", "content": list(blocks)}}}


@pytest.mark.parametrize(
    "response",
    [
        _response(
            {"text": "Looking it up."},
            {"toolUse": {"toolUseId": "t1", "name": "top_song", "input": {"sign": "WZPZ"}}},
            {"toolUse": {"toolUseId": "t2", "name": "lookup", "input": {"n": [1, {"k": 2}]}}},
            {"toolUse": {"name": "no_id", "input": {}}},
            {"toolUse": {"toolUseId": 7, "name": "odd_id"}},
        ),
        # a block with text and a toolUse: a text part, and still a requested call
        _response({"text": "both", "toolUse": {"toolUseId": "t3", "name": "x", "input": 1}}),
        _response(),
        {"output": {"message": {"content": "not a list"}}},
        {},
    ],
    ids=["calls", "text-and-tool-use", "empty", "odd-content", "no-output"],
)
def test_requested_calls_are_the_calls_tool_calls_of_reads(response: Any) -> None:
    """``requested_calls`` (from the converted output) equals ``tool_calls_of`` (from the
    response alone) for each shape."""
    assert requested_calls(response, cv.output_messages(response)) == tool_calls_of(response)


def test_request_attributes_of_every_parameter_group() -> None:
    """Each group (inference, output, guardrail) is read when given, and none is made up
    when the call leaves them out."""
    full = {
        "inferenceConfig": {
            "maxTokens": 100,
            "temperature": 1,
            "topP": 0.5,
            "stopSequences": ["END"],
        },
        "outputConfig": {"textFormat": {"type": "json_schema"}},
        "guardrailConfig": {"guardrailIdentifier": "g-1", "guardrailVersion": "1"},
    }
    assert cv.request_attributes(full, stream=True) == {
        sc.GEN_AI_REQUEST_MAX_TOKENS: 100,
        sc.GEN_AI_REQUEST_TEMPERATURE: 1.0,
        sc.GEN_AI_REQUEST_TOP_P: 0.5,
        sc.GEN_AI_REQUEST_STOP_SEQUENCES: ["END"],
        sc.GEN_AI_OUTPUT_TYPE: sc.GenAiOutputTypeValues.JSON,
        sc.AWS_BEDROCK_GUARDRAIL_ID: "g-1",
        sc.GEN_AI_REQUEST_STREAM: True,
    }
    assert cv.request_attributes({"messages": []}, stream=False) == {}
    assert cv.request_attributes({"outputConfig": {}, "guardrailConfig": {}}, stream=False) == {}
