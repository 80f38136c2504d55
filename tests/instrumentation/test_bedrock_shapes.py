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


class _Attrs:
    """An SDK-model-like object: keys read as attributes (``_shapes.get``'s other path),
    dumped like a pydantic model (``to_jsonable``)."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return dict(self.__dict__)


class _Mapping(dict[str, Any]):
    """A mapping that is not exactly ``dict`` (read through ``_shapes.get``)."""


def _as(kind: type, value: Any) -> Any:
    """``value`` with every dict turned into ``kind`` (lists kept as lists)."""
    if isinstance(value, dict):
        fields = {k: _as(kind, v) for k, v in value.items()}
        return kind(**fields) if kind is _Attrs else kind(fields)
    if isinstance(value, list):
        return [_as(kind, v) for v in value]
    return value


_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": [{"text": "What is on Radio XYZ?"}]},
    {
        "role": "assistant",
        "content": [
            {"text": "Looking."},
            {"toolUse": {"toolUseId": "t1", "name": "top_song", "input": {"sign": "XYZ"}}},
            {"reasoningContent": {"reasoningText": {"text": "hm"}}},
        ],
    },
    {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "a"}]}}]},
    {"role": "user", "content": [{"guardContent": {"text": {"text": "checked"}}}]},
    {"role": "user", "content": [{"image": {"format": "png", "source": {"bytes": b"\x89P"}}}]},
    {"role": "user", "content": [{"cachePoint": {"type": "default"}}, {"other": 1}]},
    {"content": [{"text": "no role"}]},
    {"role": "user", "content": "not a list"},
]
_USAGE = {
    "inputTokens": 10,
    "outputTokens": 3,
    "cacheReadInputTokens": 4,
    "cacheWriteInputTokens": 2,
}


@pytest.mark.parametrize("kind", [_Mapping, _Attrs], ids=["mapping", "object"])
def test_plain_dicts_read_as_any_other_shape(kind: type) -> None:
    """Messages, blocks and usage given as plain dicts (read with ``dict.get``, the fast
    path) convert exactly as the same data as other mappings or attribute objects (read
    with ``_shapes.get``)."""
    assert cv.input_messages(_as(kind, _MESSAGES)) == cv.input_messages(_MESSAGES)
    system = [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}]
    assert cv.system_instructions(_as(kind, system)) == cv.system_instructions(system)
    assert cv.usage_attributes(_as(kind, _USAGE)) == cv.usage_attributes(_USAGE)
    response = _response(*_MESSAGES[1]["content"])
    converted = _as(kind, response)
    assert cv.output_messages(converted) == cv.output_messages(response)
    output = cv.output_messages(converted)
    assert requested_calls(converted, output) == tool_calls_of(response)


def test_usage_attributes_count_the_cached_tokens_in_the_input() -> None:
    """The input total counts cache reads and writes; each is also its own attribute."""
    assert cv.usage_attributes(_USAGE) == {
        sc.GEN_AI_USAGE_INPUT_TOKENS: 16,
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 4,
        sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: 2,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 3,
    }
    assert list(cv.usage_attributes(_USAGE)) == [
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    ]
    assert cv.usage_attributes(None) == {}
    assert cv.usage_counts({"outputTokens": 1}) == (None, 1, {})
