"""The Bedrock patcher against the real ``boto3`` ``bedrock-runtime`` client and recorded
API responses.

Every test drives the installed boto3/botocore over loopback HTTP to
``tests.support.replay.ReplayServer``, which replays cassettes recorded against Bedrock by
traceloop/openllmetry and Arize-ai/openinference (Apache-2.0, see
tests/fixtures/MANIFEST.tsv); ConverseStream bodies are the recorded AWS event-stream
bytes, parsed by botocore itself. Spans go to the real OTel SDK and are compared whole, as
snapshots; every span is also checked against the pinned convention registry.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from inline_snapshot import snapshot
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.support.replay import ReplayServer
from tests.support.spans import span_dicts
from tracejudge.instrumentation.bedrock import _convert as cv

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]
TOP_SONG = {
    "tools": [
        {
            "toolSpec": {
                "name": "top_song",
                "description": "Get the most popular song played on a radio station.",
                "inputSchema": {
                    "json": {
                        "type": "object",
                        "properties": {
                            "sign": {
                                "type": "string",
                                "description": "The call sign for the radio station",
                            }
                        },
                        "required": ["sign"],
                    }
                },
            }
        }
    ]
}
RADIO = [{"role": "user", "content": [{"text": "What is the most popular song on Radio XYZ?"}]}]
WEATHER = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "description": "Get the current weather for a location",
                "inputSchema": {
                    "json": {
                        "type": "object",
                        "properties": {
                            "location": {"type": "string", "description": "The city name"}
                        },
                        "required": ["location"],
                    }
                },
            }
        }
    ]
}
BARCELONA = [{"role": "user", "content": [{"text": "What is the weather in Barcelona?"}]}]
CLAUDE = "anthropic.claude-3-sonnet-20240229-v1:0"
JAPAN = [
    {
        "role": "user",
        "content": [
            {
                "guardContent": {
                    "text": {
                        "text": "Tokyo is the capital of Japan.",
                        "qualifiers": ["grounding_source"],
                    }
                }
            },
            {"guardContent": {"text": {"text": "What is the capital of Japan?"}}},
        ],
    }
]


def bedrock(server: ReplayServer, service: str = "bedrock-runtime") -> Any:
    return boto3.client(
        service,
        region_name="us-east-1",
        endpoint_url=server.origin,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def test_converse_with_tool_use(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """A Converse call is one CLIENT ``chat {modelId}`` span, provider ``aws.bedrock``,
    with the tool definitions, the model's ``toolUse`` as a ``tool_call`` part (its id
    included) and the ``tool_use`` stop reason as ``tool_call``."""
    server = replay("bedrock/test_converse_tool_use_message.yaml")
    reply = bedrock(server).converse(
        modelId="mistral.devstral-2-123b", messages=RADIO, toolConfig=TOP_SONG
    )
    assert reply["stopReason"] == "tool_use"
    assert not server.unmatched
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "chat mistral.devstral-2-123b",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "aws.bedrock",
                    "gen_ai.request.model": "mistral.devstral-2-123b",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "What is the most popular song on Radio XYZ?",
                                }
                            ],
                        }
                    ],
                    "gen_ai.tool.definitions": [
                        {
                            "type": "function",
                            "name": "top_song",
                            "description": "Get the most popular song played on a radio station.",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "sign": {
                                        "type": "string",
                                        "description": "The call sign for the radio station",
                                    }
                                },
                                "required": ["sign"],
                            },
                        }
                    ],
                    "gen_ai.response.finish_reasons": ["tool_call"],
                    "gen_ai.usage.input_tokens": 90,
                    "gen_ai.usage.output_tokens": 14,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "top_song",
                                    "id": "tooluse_Z4oIdWzp6MUkuN99WX3jLk",
                                    "arguments": {"sign": "Radio XYZ"},
                                }
                            ],
                            "finish_reason": "tool_call",
                        }
                    ],
                },
            }
        ]
    )


def test_the_requested_tool_call_id_reaches_the_tool_span(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """The judge joins a tool execution to the model turn that asked for it: a ``@tool``
    run after a Converse response that requested it carries the ``toolUseId`` and the
    tool's description from the request."""

    @tracejudge.tool
    def top_song(sign: str) -> dict[str, str]:
        return {"song": "Elemental Hotel", "artist": "8 Storey Hike", "sign": sign}

    server = replay("bedrock/test_converse_tool_use_message.yaml")
    with tracejudge.agent("radio-agent"):
        reply = bedrock(server).converse(
            modelId="mistral.devstral-2-123b", messages=RADIO, toolConfig=TOP_SONG
        )
        use = reply["output"]["message"]["content"][0]["toolUse"]
        top_song(**use["input"])
    tool = next(s for s in span_dicts(span_exporter) if s["name"] == "execute_tool top_song")
    assert tool["attributes"]["gen_ai.tool.call.id"] == "tooluse_Z4oIdWzp6MUkuN99WX3jLk"
    assert tool["attributes"]["gen_ai.tool.description"] == (
        "Get the most popular song played on a radio station."
    )


def test_converse_with_a_guardrail(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """Guarded text is content like any other; a guardrail that intervened is the
    ``content_filter`` finish reason."""
    server = replay("bedrock/test_titan_converse.yaml")
    reply = bedrock(server).converse(
        modelId="amazon.titan-text-express-v1",
        messages=JAPAN,
        guardrailConfig={"guardrailIdentifier": "5zwrmdlsra2e", "guardrailVersion": "DRAFT"},
    )
    assert reply["stopReason"] == "guardrail_intervened"
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "chat amazon.titan-text-express-v1",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "aws.bedrock.guardrail.id": "5zwrmdlsra2e",
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "aws.bedrock",
                    "gen_ai.request.model": "amazon.titan-text-express-v1",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Tokyo is the capital of Japan."},
                                {"type": "text", "content": "What is the capital of Japan?"},
                            ],
                        }
                    ],
                    "gen_ai.response.finish_reasons": ["content_filter"],
                    "gen_ai.usage.input_tokens": 28,
                    "gen_ai.usage.output_tokens": 26,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "{ADDRESS} is the capital of {ADDRESS}.\xa0Is there anything else you would like to know about {ADDRESS} or {ADDRESS}?",
                                }
                            ],
                            "finish_reason": "content_filter",
                        }
                    ],
                },
            }
        ]
    )


def test_converse_stream_with_text_and_tool_use(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A ConverseStream's events are folded back into one message: text deltas joined,
    the tool call's JSON input deltas parsed, the stop reason and the usage of the
    ``metadata`` event; the span ends when the event stream does."""
    server = replay("bedrock/test_anthropic_converse_stream_with_tool_use.yaml")
    reply = bedrock(server).converse_stream(
        modelId=CLAUDE,
        messages=BARCELONA,
        toolConfig=WEATHER,
        inferenceConfig={"maxTokens": 300, "temperature": 0.5},
    )
    events = list(reply["stream"])
    assert events[-1]["metadata"]["usage"]["outputTokens"] == 58
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "chat anthropic.claude-3-sonnet-20240229-v1:0",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.max_tokens": 300,
                    "gen_ai.request.temperature": 0.5,
                    "gen_ai.request.stream": True,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "aws.bedrock",
                    "gen_ai.request.model": "anthropic.claude-3-sonnet-20240229-v1:0",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.response.time_to_first_chunk": "<ttfc>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "What is the weather in Barcelona?"}
                            ],
                        }
                    ],
                    "gen_ai.tool.definitions": [
                        {
                            "type": "function",
                            "name": "get_weather",
                            "description": "Get the current weather for a location",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "location": {"type": "string", "description": "The city name"}
                                },
                                "required": ["location"],
                            },
                        }
                    ],
                    "gen_ai.response.finish_reasons": ["tool_call"],
                    "gen_ai.usage.input_tokens": 236,
                    "gen_ai.usage.output_tokens": 58,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "Okay, let me check the weather for Barcelona using the available tool:",
                                },
                                {
                                    "type": "tool_call",
                                    "name": "get_weather",
                                    "id": "tooluse_yypYDr71TwCwByoyao4-Vg",
                                    "arguments": {"location": "Barcelona"},
                                },
                            ],
                            "finish_reason": "tool_call",
                        }
                    ],
                },
            }
        ]
    )


def test_stream_left_early_ends_the_span(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """Closing the event stream after the first event ends the span at once, without an
    error status; a stream never read ends when it is collected."""
    server = replay("bedrock/test_anthropic_converse_stream_with_tool_use.yaml")
    client = bedrock(server)
    stream = client.converse_stream(modelId=CLAUDE, messages=BARCELONA)["stream"]
    for _event in stream:
        break
    assert span_dicts(span_exporter) == []  # still readable: not ended by the ``break``
    stream.close()
    [first] = span_dicts(span_exporter)
    assert first["status"] == "UNSET"
    assert "gen_ai.response.finish_reasons" not in first["attributes"]
    unread = client.converse_stream(modelId=CLAUDE, messages=BARCELONA)
    del unread
    gc.collect()
    assert len(span_dicts(span_exporter)) == 2


def test_api_error_fails_the_span_and_reaches_the_caller(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """An API error (no recording for the model: the server answers 418) is botocore's
    own ``ClientError`` in the application; the span is ERROR with the exception event."""
    server = replay("bedrock/test_titan_converse.yaml")
    with pytest.raises(ClientError):
        bedrock(server).converse(modelId="unknown-model", messages=RADIO)
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "chat unknown-model",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 3000000000,
                "status": "ERROR",
                "status_description": "An error occurred (418) when calling the Converse operation: ",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "aws.bedrock",
                    "gen_ai.request.model": "unknown-model",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "error.type": "418",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "What is the most popular song on Radio XYZ?",
                                }
                            ],
                        }
                    ],
                },
                "events": [
                    {
                        "name": "exception",
                        "timestamp": 2000000000,
                        "attributes": {
                            "exception.type": "botocore.exceptions.ClientError",
                            "exception.message": "An error occurred (418) when calling the Converse operation: ",
                            "exception.stacktrace": "<traceback>",
                        },
                    }
                ],
            }
        ]
    )


def test_other_aws_calls_are_not_traced(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """Only Bedrock Runtime's Converse operations are model calls: another service's call
    (the Bedrock control plane) and another Bedrock Runtime operation pass through
    untouched, with no span."""
    server = replay("bedrock/test_titan_converse.yaml")
    with pytest.raises(ClientError):
        bedrock(server, "bedrock").list_foundation_models()
    with pytest.raises(ClientError):
        bedrock(server).invoke_model(modelId="amazon.titan-text-express-v1", body=b"{}")
    assert len(server.requests) == 2
    assert span_dicts(span_exporter) == []


def test_a_telemetry_bug_never_reaches_the_application(
    replay: Replay,
    span_exporter: InMemorySpanExporter,
    tracer_provider: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the default ``raise_internal_errors=False``, a translation that raises is
    logged; the call returns botocore's response and the span still ends — the streamed
    call's too."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")

    def broken(response: Any) -> list[dict[str, Any]]:
        raise RuntimeError("telemetry bug")

    monkeypatch.setattr(cv, "output_messages", broken)
    server = replay(
        "bedrock/test_converse_tool_use_message.yaml",
        "bedrock/test_anthropic_converse_stream_with_tool_use.yaml",
    )
    client = bedrock(server)
    assert client.converse(modelId="mistral.devstral-2-123b", messages=RADIO)["stopReason"]
    assert list(client.converse_stream(modelId=CLAUDE, messages=BARCELONA)["stream"])
    assert [s["name"] for s in span_dicts(span_exporter)] == [
        "chat mistral.devstral-2-123b",
        f"chat {CLAUDE}",
    ]


def test_no_content_keeps_only_the_requested_tool_calls(
    replay: Replay, span_exporter: InMemorySpanExporter, tracer_provider: Any
) -> None:
    """Without content capture the messages and tool definitions are not recorded; the
    ``toolUse`` the model asked for still is, with its id (the judge's evidence)."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="NO_CONTENT")
    server = replay("bedrock/test_converse_tool_use_message.yaml")
    bedrock(server).converse(modelId="mistral.devstral-2-123b", messages=RADIO, toolConfig=TOP_SONG)
    [span] = span_dicts(span_exporter)
    attributes = span["attributes"]
    assert not {"gen_ai.input.messages", "gen_ai.tool.definitions"} & set(attributes)
    assert attributes["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "name": "top_song",
                    "id": "tooluse_Z4oIdWzp6MUkuN99WX3jLk",
                    "arguments": {"sign": "Radio XYZ"},
                }
            ],
        }
    ]


def test_uninstrument_restores_botocore_and_instrument_patches_it_again(
    replay: Replay, span_exporter: InMemorySpanExporter, tracer_provider: Any
) -> None:
    """``uninstrument()`` puts botocore's ``_make_api_call`` back (a call makes no span);
    ``instrument()`` again traces the next call."""
    from botocore.client import BaseClient

    original = BaseClient._make_api_call.__tracejudge_wrapped__
    server = replay("bedrock/test_converse_tool_use_message.yaml")
    client = bedrock(server)
    tracejudge.uninstrument()
    assert BaseClient.__dict__["_make_api_call"] is original
    client.converse(modelId="mistral.devstral-2-123b", messages=RADIO)
    assert span_dicts(span_exporter) == []
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")
    client.converse(modelId="mistral.devstral-2-123b", messages=RADIO)
    assert [s["name"] for s in span_dicts(span_exporter)] == ["chat mistral.devstral-2-123b"]


def test_a_tool_call_with_invalid_json_input_is_kept_as_sent() -> None:
    """A streamed ``toolUse`` whose input deltas are not valid JSON (a malformed model
    response) is recorded as the text the model sent, never dropped and never raised;
    an unknown stop reason passes through."""
    from tracejudge.instrumentation.bedrock._patch import EventAccumulator

    acc = EventAccumulator()
    for event in (
        {"messageStart": {"role": "assistant"}},
        {
            "contentBlockStart": {
                "contentBlockIndex": 0,
                "start": {"toolUse": {"toolUseId": "t1", "name": "top_song"}},
            }
        },
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"sign'}}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "something_new"}},
    ):
        acc.add(event)
    assert acc.blocks[0]["toolUse"]["input"] == '{"sign'
    assert cv.finish_reason(acc.response["stopReason"]) == "something_new"
