"""The Gemini patcher against the real ``google-genai`` SDK and recorded API responses.

Every test drives the installed SDK over loopback HTTP to
``tests.support.replay.ReplayServer``, which replays cassettes recorded by
Arize-ai/openinference against the Gemini API (Apache-2.0, see tests/fixtures/MANIFEST.tsv).
Spans go to the real OTel SDK and are compared whole, as snapshots; every span is also
checked against the pinned convention registry (``otel_traces``).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from typing import Any

import pytest
from google import genai
from google.genai import errors, types
from inline_snapshot import snapshot
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.support.providers import assert_left_unpatched_outside_the_range
from tests.support.replay import ReplayServer
from tests.support.spans import span_dicts
from tracejudge.instrumentation.gemini import _convert as cv
from tracejudge.instrumentation.gemini._patch import SPEC

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]
MODEL = "gemini-2.0-flash"
SYSTEM = (
    "You are a helpful assistant that can answer questions and help with tasks. "
    "Use the available tools when appropriate."
)
WEATHER_TOOL = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Get current weather information for a given location",
            parameters=types.Schema(
                type=types.Type.OBJECT,
                properties={
                    "location": types.Schema(
                        type=types.Type.STRING,
                        description="The city and state/country for weather information",
                    ),
                    "unit": types.Schema(
                        type=types.Type.STRING,
                        description="Temperature unit",
                        enum=["celsius", "fahrenheit"],
                    ),
                },
                required=["location"],
            ),
        )
    ]
)
STORY = "Tell me a short story about a cat."


def client(server: ReplayServer) -> genai.Client:
    """A client on the replay server (keep it referenced: a collected ``Client`` closes
    the HTTP client its ``models`` share)."""
    return genai.Client(
        api_key="test-key",
        http_options=types.HttpOptions(base_url=server.origin, api_version="v1beta"),
    )


def tool_config() -> types.GenerateContentConfig:
    return types.GenerateContentConfig(system_instruction=SYSTEM, tools=[WEATHER_TOOL])


def test_generate_content_with_a_function_call(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """The basic Gemini model call: one CLIENT ``generate_content {model}`` span, provider
    ``gcp.gemini``, with the system instruction, the tool definitions and the function
    call the model asked for (``tool_call`` part), usage and the response id."""
    server = replay("gemini/test_generate_content_with_tool.yaml")
    c = client(server)
    reply = c.models.generate_content(
        model=MODEL, contents="What's the weather like in San Francisco?", config=tool_config()
    )
    assert reply.function_calls is not None
    assert reply.function_calls[0].name == "get_weather"
    assert not server.unmatched
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "generate_content gemini-2.0-flash",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "generate_content",
                    "gen_ai.provider.name": "gcp.gemini",
                    "gen_ai.request.model": "gemini-2.0-flash",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "What's the weather like in San Francisco?",
                                }
                            ],
                        }
                    ],
                    "gen_ai.system_instructions": [
                        {
                            "type": "text",
                            "content": "You are a helpful assistant that can answer questions and help with tasks. Use the available tools when appropriate.",
                        }
                    ],
                    "gen_ai.tool.definitions": [
                        {
                            "type": "function",
                            "name": "get_weather",
                            "description": "Get current weather information for a given location",
                            "parameters": {
                                "properties": {
                                    "location": {
                                        "description": "The city and state/country for weather information",
                                        "type": "STRING",
                                    },
                                    "unit": {
                                        "description": "Temperature unit",
                                        "enum": ["celsius", "fahrenheit"],
                                        "type": "STRING",
                                    },
                                },
                                "required": ["location"],
                                "type": "OBJECT",
                            },
                        }
                    ],
                    "gen_ai.response.id": "k9cEavP3CLWnqtsPg8Tg0As",
                    "gen_ai.response.model": "gemini-2.0-flash",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 63,
                    "gen_ai.usage.output_tokens": 6,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "get_weather",
                                    "arguments": {"location": "San Francisco"},
                                }
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            }
        ]
    )


def test_history_with_function_call_and_response(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A history that carries the model's function call and its result: the model turn is
    ``assistant`` with the ``tool_call`` part, the function response is a ``tool`` turn
    (where the conventions put tool results), in order."""
    server = replay("gemini/test_generate_content.yaml")
    history = [
        types.Content(role="user", parts=[types.Part(text="What's the weather like?")]),
        types.Content(
            role="model",
            parts=[
                types.Part(
                    function_call=types.FunctionCall(
                        id="call_abc123", name="get_weather", args={"location": "San Francisco"}
                    )
                )
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="call_abc123",
                        name="get_weather",
                        response={"temperature": 65, "condition": "foggy"},
                    )
                )
            ],
        ),
    ]
    c = client(server)
    reply = c.models.generate_content(
        model=MODEL,
        contents=history,
        config={"system_instruction": "You are helpful.", "temperature": 0.3, "top_k": 40},
    )
    assert reply.text is not None
    assert "foggy" in reply.text
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "generate_content gemini-2.0-flash",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.temperature": 0.3,
                    "gen_ai.request.top_k": 40,
                    "gen_ai.operation.name": "generate_content",
                    "gen_ai.provider.name": "gcp.gemini",
                    "gen_ai.request.model": "gemini-2.0-flash",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "What's the weather like?"}],
                        },
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "get_weather",
                                    "id": "call_abc123",
                                    "arguments": {"location": "San Francisco"},
                                }
                            ],
                        },
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "response": {"temperature": 65, "condition": "foggy"},
                                    "id": "call_abc123",
                                }
                            ],
                        },
                    ],
                    "gen_ai.system_instructions": [{"type": "text", "content": "You are helpful."}],
                    "gen_ai.response.id": "hNcEarPuMNa3qtsP7MHt4As",
                    "gen_ai.response.model": "gemini-2.0-flash",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 45,
                    "gen_ai.usage.output_tokens": 23,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "The weather in San Francisco is foggy with a temperature of 65 degrees Fahrenheit and 85% humidity.",
                                }
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            }
        ]
    )


def test_stream_read_to_the_end(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """A stream's chunks are folded into one output message (text joined), with the last
    chunk's usage and finish reason; the span ends when the stream does."""
    server = replay("gemini/test_streaming_text_content.yaml")
    c = client(server)
    chunks = list(c.models.generate_content_stream(model=MODEL, contents=STORY))
    assert len(chunks) > 3
    story = "".join(chunk.text or "" for chunk in chunks)
    spans = span_dicts(span_exporter)
    assert spans[0]["attributes"]["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": story}
    ]
    assert span_dicts(span_exporter, drop=("gen_ai.output.messages",)) == snapshot(
        [
            {
                "name": "generate_content gemini-2.0-flash",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.stream": True,
                    "gen_ai.operation.name": "generate_content",
                    "gen_ai.provider.name": "gcp.gemini",
                    "gen_ai.request.model": "gemini-2.0-flash",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.response.time_to_first_chunk": "<ttfc>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Tell me a short story about a cat."}
                            ],
                        }
                    ],
                    "gen_ai.response.id": "jNcEavSuHfWA7_UP9-uokQs",
                    "gen_ai.response.model": "gemini-2.0-flash",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 9,
                    "gen_ai.usage.output_tokens": 527,
                },
            }
        ]
    )


def test_async_stream_with_a_function_call(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``client.aio`` streams are traced the same way: the function call arrives in a
    chunk and is recorded as the ``tool_call`` part."""
    server = replay("gemini/test_streaming_content_with_tool.yaml")

    c = client(server)

    async def run() -> list[types.GenerateContentResponse]:
        stream = await c.aio.models.generate_content_stream(
            model=MODEL, contents="What's the weather like in San Francisco?", config=tool_config()
        )
        return [chunk async for chunk in stream]

    assert len(asyncio.run(run())) == 1
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "generate_content gemini-2.0-flash",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.stream": True,
                    "gen_ai.operation.name": "generate_content",
                    "gen_ai.provider.name": "gcp.gemini",
                    "gen_ai.request.model": "gemini-2.0-flash",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.response.time_to_first_chunk": "<ttfc>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "What's the weather like in San Francisco?",
                                }
                            ],
                        }
                    ],
                    "gen_ai.system_instructions": [
                        {
                            "type": "text",
                            "content": "You are a helpful assistant that can answer questions and help with tasks. Use the available tools when appropriate.",
                        }
                    ],
                    "gen_ai.tool.definitions": [
                        {
                            "type": "function",
                            "name": "get_weather",
                            "description": "Get current weather information for a given location",
                            "parameters": {
                                "properties": {
                                    "location": {
                                        "description": "The city and state/country for weather information",
                                        "type": "STRING",
                                    },
                                    "unit": {
                                        "description": "Temperature unit",
                                        "enum": ["celsius", "fahrenheit"],
                                        "type": "STRING",
                                    },
                                },
                                "required": ["location"],
                                "type": "OBJECT",
                            },
                        }
                    ],
                    "gen_ai.response.id": "ldcEapKDBbCH7_UP6LC-6AE",
                    "gen_ai.response.model": "gemini-2.0-flash",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 63,
                    "gen_ai.usage.output_tokens": 6,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "get_weather",
                                    "arguments": {"location": "San Francisco"},
                                }
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            }
        ]
    )


def test_async_generate_content(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """The async client's ``generate_content`` is one span like the sync one."""
    server = replay("gemini/test_generate_content_with_tool.yaml")
    c = client(server)
    reply = asyncio.run(
        c.aio.models.generate_content(
            model=MODEL, contents="What's the weather like in San Francisco?", config=tool_config()
        )
    )
    assert reply.function_calls is not None
    [span] = span_dicts(span_exporter)
    assert span["name"] == "generate_content gemini-2.0-flash"
    assert span["attributes"]["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "name": "get_weather",
                    "arguments": {"location": "San Francisco"},
                }
            ],
            "finish_reason": "stop",
        }
    ]


def test_stream_left_early_ends_the_span_with_what_arrived(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A ``break`` out of the stream ends the span at once (no leak, no error status),
    keeping the text that arrived; a stream dropped unread ends when it is collected."""
    server = replay("gemini/test_streaming_text_content.yaml")
    c = client(server)
    models = c.models
    for _chunk in models.generate_content_stream(model=MODEL, contents=STORY):
        break
    [first] = span_dicts(span_exporter)
    assert first["status"] == "UNSET"
    assert first["attributes"]["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": "C"}]}
    ]
    unread = models.generate_content_stream(model=MODEL, contents=STORY)
    del unread
    gc.collect()
    spans = span_dicts(span_exporter)
    assert len(spans) == 2
    assert "gen_ai.output.messages" not in spans[1]["attributes"]


def test_api_error_fails_the_span_and_reaches_the_caller(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """An API error (no recording: the server answers 418) reaches the application as
    the SDK's own exception; the span is ERROR with the exception event."""
    server = replay("gemini/test_generate_content_with_tool.yaml")
    c = client(server)
    with pytest.raises(errors.ClientError):
        c.models.generate_content(model="gemini-unknown", contents="hi")
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "generate_content gemini-unknown",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 3000000000,
                "status": "ERROR",
                "status_description": "418 None. {'error': {'message': 'no recording for POST /v1beta/models/gemini-unknown:generateContent'}}",
                "attributes": {
                    "gen_ai.operation.name": "generate_content",
                    "gen_ai.provider.name": "gcp.gemini",
                    "gen_ai.request.model": "gemini-unknown",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "error.type": "418",
                    "gen_ai.input.messages": [
                        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
                    ],
                },
                "events": [
                    {
                        "name": "exception",
                        "timestamp": 2000000000,
                        "attributes": {
                            "exception.type": "google.genai.errors.ClientError",
                            "exception.message": "418 None. {'error': {'message': 'no recording for POST /v1beta/models/gemini-unknown:generateContent'}}",
                            "exception.stacktrace": "<traceback>",
                        },
                    }
                ],
            }
        ]
    )


def test_a_telemetry_bug_never_reaches_the_application(
    replay: Replay,
    span_exporter: InMemorySpanExporter,
    tracer_provider: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the default ``raise_internal_errors=False``, a translation that raises (here:
    the output conversion) is logged; the SDK call returns its response and the span still
    ends."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")

    def broken(response: Any) -> list[dict[str, Any]]:
        raise RuntimeError("telemetry bug")

    monkeypatch.setattr(cv, "output_messages", broken)
    server = replay("gemini/test_streaming_text_content.yaml", "gemini/test_generate_content.yaml")
    c = client(server)
    reply = c.models.generate_content(model=MODEL, contents="hi")
    assert reply.text is not None
    chunks = list(c.models.generate_content_stream(model=MODEL, contents=STORY))
    assert chunks
    assert [s["name"] for s in span_dicts(span_exporter)] == [
        "generate_content gemini-2.0-flash",
        "generate_content gemini-2.0-flash",
    ]


def test_sdk_outside_the_supported_range_is_left_unpatched(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An SDK version outside the tested range: one warning naming the range, nothing
    patched (the application runs untraced rather than on guessed internals)."""
    assert_left_unpatched_outside_the_range(SPEC, caplog)


def test_no_content_keeps_only_the_requested_function_calls(
    replay: Replay, span_exporter: InMemorySpanExporter, tracer_provider: Any
) -> None:
    """Without content capture the prompt, system instruction and tool definitions are not
    recorded; the function call the model asked for still is (the judge's evidence)."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="NO_CONTENT")
    server = replay("gemini/test_generate_content_with_tool.yaml")
    c = client(server)
    c.models.generate_content(
        model=MODEL, contents="What's the weather like in San Francisco?", config=tool_config()
    )
    [span] = span_dicts(span_exporter)
    attributes = span["attributes"]
    assert not {
        "gen_ai.input.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.definitions",
    } & set(attributes)
    assert attributes["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "name": "get_weather",
                    "arguments": {"location": "San Francisco"},
                }
            ],
        }
    ]


def test_uninstrument_restores_the_sdk_and_instrument_patches_it_again(
    replay: Replay, span_exporter: InMemorySpanExporter, tracer_provider: Any
) -> None:
    """``uninstrument()`` puts the SDK's own methods back (a call makes no span);
    ``instrument()`` again traces the next call."""
    from google.genai.models import AsyncModels, Models

    originals = {
        (cls, name): getattr(cls, name).__tracejudge_wrapped__
        for cls in (Models, AsyncModels)
        for name in ("generate_content", "generate_content_stream")
    }
    server = replay("gemini/test_generate_content_with_tool.yaml")
    c = client(server)
    tracejudge.uninstrument()
    assert all(cls.__dict__[name] is fn for (cls, name), fn in originals.items())
    c.models.generate_content(model=MODEL, contents="What's the weather like in San Francisco?")
    assert span_dicts(span_exporter) == []
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")
    c.models.generate_content(model=MODEL, contents="What's the weather like in San Francisco?")
    assert [s["name"] for s in span_dicts(span_exporter)] == ["generate_content gemini-2.0-flash"]


def test_finish_reasons_map_to_the_conventions_and_unknown_ones_pass_through() -> None:
    """A finish reason the conventions name is mapped; one they do not (a value a newer
    API adds) is kept, lower-cased, rather than dropped; the unspecified one is absent."""
    assert cv.finish_reason(types.FinishReason.MAX_TOKENS) == "length"
    assert cv.finish_reason("SAFETY") == "content_filter"
    assert cv.finish_reason("SOMETHING_NEW") == "something_new"
    assert cv.finish_reason("FINISH_REASON_UNSPECIFIED") is None
    assert cv.usage_attributes(None) == {}


def test_a_vertex_ai_client_is_the_vertex_ai_provider(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """The same SDK talks to Vertex AI (``vertexai=True``): its spans name ``gcp.vertex_ai``,
    as the conventions ask for the ``aiplatform`` endpoint. (No Vertex AI recording exists
    here: the server answers 418, which is also the call's recorded error.)"""
    from google.oauth2.credentials import Credentials

    server = replay("gemini/test_generate_content_with_tool.yaml")
    # a token without an expiry is never refreshed: no Google credentials are needed
    vertex = genai.Client(
        vertexai=True,
        project="tracejudge-test",
        location="us-central1",
        credentials=Credentials(token="test-token"),  # type: ignore[no-untyped-call]
        http_options=types.HttpOptions(base_url=server.origin),
    )
    with pytest.raises(errors.ClientError):
        vertex.models.generate_content(model=MODEL, contents="hi")
    [span] = span_dicts(span_exporter)
    assert span["attributes"]["gen_ai.provider.name"] == "gcp.vertex_ai"
    assert span["attributes"]["error.type"] == "418"
