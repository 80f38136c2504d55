"""The LiteLLM patcher against the real ``litellm`` package and recorded API responses.

Every test drives the installed ``litellm`` over loopback HTTP to
``tests.support.replay.ReplayServer``, which replays cassettes recorded against the
Anthropic, OpenAI and Mistral APIs (the ones the provider tests replay; LiteLLM calls the
same APIs: its ``anthropic/`` route with its own HTTP code, its ``openai/`` and
``azure/`` routes through the real ``openai`` SDK, which tracejudge patches too).
Spans go to the real OTel SDK and are compared whole, as snapshots; every span is also
checked against the pinned convention registry.

LiteLLM makes up the response id of an Anthropic response (``chatcmpl-<uuid>``) and
``created`` from the clock: the id is checked against what the application got, then
masked.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: the packaged prices
import litellm
import openai

import tracejudge
from tests.support.guards import PROCESS_S
from tests.support.litellm_calls import (
    ANTHROPIC_ASYNC_STREAM,
    ANTHROPIC_CREATE,
    ANTHROPIC_STREAM,
    ANTHROPIC_TOOLS,
    JOKE,
    OPENAI_CREATE,
    OPENAI_STREAM,
    TEST,
    WEATHER,
    WEATHER_TOOLS,
    claude,
    masked_id,
)
from tests.support.providers import (
    assert_an_unread_stream_ends_when_collected,
    assert_left_unpatched_outside_the_range,
    assert_uninstrument_round_trip,
)
from tests.support.replay import ReplayServer, derived_cassette
from tests.support.spans import span_dicts
from tracejudge.instrumentation import _patcher
from tracejudge.instrumentation.litellm import _patch as litellm_patch

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]


def test_completion_on_litellms_own_http_code(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``anthropic/...``: LiteLLM calls the API with its own HTTP code. One CLIENT span
    ``chat {model}``: the provider LiteLLM routed to (``anthropic``), the model it asked
    that provider for (no ``anthropic/`` prefix), the prompt, answer, usage and finish
    reason, translated from LiteLLM's OpenAI-shaped response."""
    server = replay(ANTHROPIC_CREATE)
    reply = claude(server, temperature=0.5)
    assert not server.unmatched
    assert server.requests[0].path == "/v1/messages"
    assert masked_id(span_dicts(span_exporter), reply.id) == snapshot(
        [
            {
                "name": "chat claude-3-opus-20240229",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.max_tokens": 1024,
                    "gen_ai.request.temperature": 0.5,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "anthropic",
                    "gen_ai.request.model": "claude-3-opus-20240229",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Tell me a joke about OpenTelemetry"}
                            ],
                        }
                    ],
                    "gen_ai.usage.cache_read.input_tokens": 0,
                    "gen_ai.usage.reasoning.output_tokens": 0,
                    "gen_ai.response.id": "<id>",
                    "gen_ai.response.model": "claude-3-opus-20240229",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 17,
                    "gen_ai.usage.output_tokens": 220,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": """\
Sure, here's a joke about OpenTelemetry:

Why did the developer adopt OpenTelemetry?
Because they wanted to trace their steps and meter their progress!

Explanation:
OpenTelemetry is an open-source observability framework that provides a set of APIs, libraries, and tools to instrument, generate, collect, and export telemetry data (traces, metrics, and logs) for distributed systems. The joke plays on the words "trace" and "meter," which are key concepts in OpenTelemetry.

- "Trace their steps" refers to distributed tracing, which involves recording the path of a request as it travels through a system of microservices.
- "Meter their progress" refers to metrics, which are quantitative measurements of a system's performance and behavior.

The joke suggests that the developer adopted OpenTelemetry to gain better visibility and understanding of their application's behavior and performance, just like how one might trace their steps and meter their progress in real life.\
""",
                                }
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            }
        ]
    )


def test_positional_arguments_are_read_as_keywords(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``completion(model, messages)`` positionally: the span reads the same request."""
    server = replay(ANTHROPIC_CREATE)
    litellm.completion(
        "anthropic/claude-3-opus-20240229", JOKE, api_base=server.origin, api_key="test-key"
    )
    [span] = span_dicts(span_exporter)
    assert span["name"] == "chat claude-3-opus-20240229"
    assert span["attributes"]["gen_ai.input.messages"] == [
        {"role": "user", "parts": [{"type": "text", "content": JOKE[0]["content"]}]}
    ]


def test_tool_calls_reach_the_span_and_the_tool_spans(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """The tool calls the model asked for (Anthropic ``tool_use`` blocks, turned by
    LiteLLM into OpenAI ``tool_calls``) are ``tool_call`` parts with their ids, and a
    ``@tool`` run after the response carries the id and the description the request gave
    the tool (the judge joins a tool execution to the turn that asked for it)."""

    @tracejudge.tool
    def get_weather(location: str) -> str:
        return f"sunny in {location}"

    server = replay(ANTHROPIC_TOOLS)
    with tracejudge.agent("weather-agent"):
        reply = litellm.completion(
            model="anthropic/claude-3-5-sonnet-20240620",
            messages=WEATHER,
            tools=WEATHER_TOOLS,
            api_base=server.origin,
            api_key="test-key",
            max_tokens=1024,
        )
        call = reply.choices[0].message.tool_calls[0]
        get_weather(location="New York, NY")
    spans = span_dicts(span_exporter)
    tool = next(s for s in spans if s["name"] == "execute_tool get_weather")
    assert tool["attributes"]["gen_ai.tool.call.id"] == call.id
    assert tool["attributes"]["gen_ai.tool.description"] == (
        "Get the current weather in a given location"
    )
    [chat] = [s for s in spans if s["name"].startswith("chat ")]
    assert masked_id([chat], reply.id)[0]["attributes"]["gen_ai.output.messages"] == snapshot(
        [
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "text",
                        "content": "Certainly! I'd be happy to help you with both the current weather in New York and the current time there. Let's use the available tools to get this information for you.",
                    },
                    {
                        "type": "tool_call",
                        "name": "get_weather",
                        "id": "toolu_012r6TBCWjRHG71j6zruYyUL",
                        "arguments": {"location": "New York, NY", "unit": "fahrenheit"},
                    },
                    {
                        "type": "tool_call",
                        "name": "get_time",
                        "id": "toolu_01SkeBKkLCNYWNuivqFerGDd",
                        "arguments": {"timezone": "America/New_York"},
                    },
                ],
                "finish_reason": "tool_call",
            }
        ]
    )


def test_openai_route_gives_one_span_not_two(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``openai/...``: LiteLLM sends the request with the real ``openai`` SDK's client.
    One span, LiteLLM's, identical in what it says to the ``openai`` patch's span of a
    direct call beside it (less the ``openai.*`` attributes), which keeps its own span."""
    server = replay(OPENAI_CREATE)
    reply = litellm.completion(
        model="openai/gpt-4o-mini", messages=TEST, api_base=server.base_url, api_key="test-key"
    )
    assert server.requests[0].path == "/v1/chat/completions"
    direct = openai.OpenAI(base_url=server.base_url, api_key="test-key")
    direct.chat.completions.create(model="gpt-4o-mini", messages=TEST)
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "chat gpt-4o-mini",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "Say this is a test"}],
                        }
                    ],
                    "gen_ai.usage.cache_read.input_tokens": 0,
                    "gen_ai.usage.reasoning.output_tokens": 0,
                    "gen_ai.response.id": "chatcmpl-ASYMQRl3A3DXL9FWCK9tnGRcKIO7q",
                    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 12,
                    "gen_ai.usage.output_tokens": 5,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": "This is a test."}],
                            "finish_reason": "stop",
                        }
                    ],
                },
            },
            {
                "name": "chat gpt-4o-mini",
                "kind": "CLIENT",
                "context": {"trace_id": 2, "span_id": 2},
                "parent": None,
                "start_time": 3000000000,
                "end_time": 4000000000,
                "status": "UNSET",
                "attributes": {
                    "openai.api.type": "chat_completions",
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "Say this is a test"}],
                        }
                    ],
                    "gen_ai.usage.cache_read.input_tokens": 0,
                    "gen_ai.usage.reasoning.output_tokens": 0,
                    "openai.response.system_fingerprint": "fp_0ba0d124f1",
                    "gen_ai.response.id": "chatcmpl-ASYMQRl3A3DXL9FWCK9tnGRcKIO7q",
                    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 12,
                    "gen_ai.usage.output_tokens": 5,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": "This is a test."}],
                            "finish_reason": "stop",
                        }
                    ],
                },
            },
        ]
    )
    assert reply.id == span_dicts(span_exporter)[0]["attributes"]["gen_ai.response.id"]


def azure(server: ReplayServer) -> Any:
    return litellm.completion(
        model="azure/gpt-4o-mini",
        messages=TEST,
        api_base=server.origin,
        api_key="test-key",
        api_version="2024-10-21",
    )


def test_a_route_through_the_openai_sdks_create_gives_one_span(
    replay: Replay,
    span_exporter: InMemorySpanExporter,
    tmp_path: Path,
) -> None:
    """``azure/...``: LiteLLM calls ``chat.completions.create`` of the real ``openai`` SDK
    (its ``AzureOpenAI`` client), the method tracejudge's ``openai`` patch wraps (LiteLLM's
    ``openai/`` route posts through the SDK's client without it). One span, LiteLLM's,
    provider ``azure.ai.openai``. With LiteLLM's function unwrapped, the same call makes
    the ``openai`` patch's span: the SDK call is inside LiteLLM's, and without the
    duplicate check there would be two."""
    recorded = derived_cassette(
        OPENAI_CREATE, tmp_path, [], path="/openai/deployments/gpt-4o-mini/chat/completions"
    )
    reply = azure(replay(recorded))
    assert masked_id(span_dicts(span_exporter), reply.id) == snapshot(
        [
            {
                "name": "chat gpt-4o-mini",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "azure.ai.openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "Say this is a test"}],
                        }
                    ],
                    "gen_ai.usage.cache_read.input_tokens": 0,
                    "gen_ai.usage.reasoning.output_tokens": 0,
                    "gen_ai.response.id": "<id>",
                    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 12,
                    "gen_ai.usage.output_tokens": 5,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": "This is a test."}],
                            "finish_reason": "stop",
                        }
                    ],
                },
            }
        ]
    )
    span_exporter.clear()
    wrapper = litellm.completion
    litellm.completion = wrapper.__tracejudge_wrapped__  # put back before uninstrument()
    try:
        azure(replay(recorded))
    finally:
        litellm.completion = wrapper
    [sdk_span] = span_dicts(span_exporter)
    assert sdk_span["attributes"]["openai.api.type"] == "chat_completions"


def test_stream_ends_the_span_when_it_ends(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A ``stream=True`` call: the span is open while the application reads LiteLLM's
    ``CustomStreamWrapper`` and ends with the last chunk, its deltas joined."""
    server = replay(ANTHROPIC_STREAM)
    stream = litellm.completion(
        model="anthropic/claude-3-haiku-20240307",
        messages=JOKE,
        api_base=server.origin,
        api_key="test-key",
        max_tokens=1024,
        stream=True,
    )
    assert span_dicts(span_exporter) == []
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    spans = masked_id(span_dicts(span_exporter), chunks[0].id)
    assert spans[0]["attributes"]["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": text}
    ]
    assert spans == snapshot(
        [
            {
                "name": "chat claude-3-haiku-20240307",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.max_tokens": 1024,
                    "gen_ai.request.stream": True,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "anthropic",
                    "gen_ai.request.model": "claude-3-haiku-20240307",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.response.time_to_first_chunk": "<ttfc>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Tell me a joke about OpenTelemetry"}
                            ],
                        }
                    ],
                    "gen_ai.response.id": "<id>",
                    "gen_ai.response.model": "claude-3-haiku-20240307",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": """\
Here's an OpenTelemetry-themed joke for you:

Why did the developer feel so lost when using OpenTelemetry?
They were in a Span of Confusion!

The idea behind this joke is that OpenTelemetry uses the concept of "spans" to represent individual operations or requests within a distributed system. When a developer is first getting started with OpenTelemetry, they may feel a bit disoriented or lost trying to understand all the different spans and how they fit together - hence the "Span of Confusion" pun.

Hopefully this gives you a chuckle and provides a lighthearted introduction to some of the key concepts in OpenTelemetry. Let me know if you'd like to hear any other tech-themed jokes!\
""",
                                }
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            }
        ]
    )


def test_openai_stream_through_the_sdk_is_one_span_with_usage(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``openai/...`` streamed: the SDK's stream inside LiteLLM's is not observed (no
    second span); LiteLLM's is, with the usage of the last chunk."""
    server = replay(OPENAI_STREAM)
    stream = litellm.completion(
        model="openai/gpt-4",
        messages=TEST,
        api_base=server.base_url,
        api_key="test-key",
        stream=True,
        stream_options={"include_usage": True},
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "chat gpt-4",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.stream": True,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.response.time_to_first_chunk": "<ttfc>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "Say this is a test"}],
                        }
                    ],
                    "gen_ai.usage.cache_read.input_tokens": 0,
                    "gen_ai.usage.reasoning.output_tokens": 0,
                    "gen_ai.response.id": "chatcmpl-ASYMZ4oSykiIFK4lXLReDiKyAjsQl",
                    "gen_ai.response.model": "gpt-4",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 12,
                    "gen_ai.usage.output_tokens": 5,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": '"This is a test."'}],
                            "finish_reason": "stop",
                        }
                    ],
                },
            }
        ]
    )


def test_async_completion_and_stream(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """``acompletion`` is traced like ``completion``, streamed or not; an async stream
    ends its span with its last chunk."""
    created = replay(ANTHROPIC_CREATE)
    streamed = replay(ANTHROPIC_ASYNC_STREAM)

    async def run() -> tuple[str, str]:
        reply = await litellm.acompletion(
            model="anthropic/claude-3-opus-20240229",
            messages=JOKE,
            api_base=created.origin,
            api_key="test-key",
        )
        stream = await litellm.acompletion(
            model="anthropic/claude-3-haiku-20240307",
            messages=JOKE,
            api_base=streamed.origin,
            api_key="test-key",
            stream=True,
        )
        ids = {chunk.id async for chunk in stream}
        assert len(ids) == 1
        return str(reply.id), ids.pop()

    first, second = asyncio.run(run())
    spans = span_dicts(span_exporter, drop=("gen_ai.output.messages",))
    masked_id(spans[:1], first)
    masked_id(spans[1:], second)
    assert spans == snapshot(
        [
            {
                "name": "chat claude-3-opus-20240229",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "anthropic",
                    "gen_ai.request.model": "claude-3-opus-20240229",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Tell me a joke about OpenTelemetry"}
                            ],
                        }
                    ],
                    "gen_ai.usage.cache_read.input_tokens": 0,
                    "gen_ai.usage.reasoning.output_tokens": 0,
                    "gen_ai.response.id": "<id>",
                    "gen_ai.response.model": "claude-3-opus-20240229",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 17,
                    "gen_ai.usage.output_tokens": 220,
                },
            },
            {
                "name": "chat claude-3-haiku-20240307",
                "kind": "CLIENT",
                "context": {"trace_id": 2, "span_id": 2},
                "parent": None,
                "start_time": 3000000000,
                "end_time": 4000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.stream": True,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "anthropic",
                    "gen_ai.request.model": "claude-3-haiku-20240307",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.response.time_to_first_chunk": "<ttfc>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Tell me a joke about OpenTelemetry"}
                            ],
                        }
                    ],
                    "gen_ai.response.id": "<id>",
                    "gen_ai.response.model": "claude-3-haiku-20240307",
                    "gen_ai.response.finish_reasons": ["stop"],
                },
            },
        ]
    )


def test_stream_left_early_ends_the_span_with_what_arrived(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A ``break`` out of the stream, then leaving its ``with`` block (which closes it),
    ends the span at once (no error status), keeping what arrived; a stream dropped
    unread ends when it is collected."""
    server = replay(ANTHROPIC_STREAM)

    def open_stream() -> Any:
        return claude(server, stream=True)

    with open_stream() as stream:
        for chunk in stream:
            if chunk.choices[0].delta.content:
                break
        assert span_dicts(span_exporter) == []  # the stream can still be read on
    [first] = span_dicts(span_exporter)
    assert first["status"] == "UNSET"
    assert first["attributes"]["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Here's an"}]}
    ]
    assert_an_unread_stream_ends_when_collected(open_stream, span_exporter)


def test_async_stream_closed_early_ends_the_span(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """An async stream left with ``async with`` (LiteLLM's ``aclose``) ends its span
    then, not at collection (the stream class serves both kinds of call: its sync
    ``close`` is not awaited)."""
    server = replay(ANTHROPIC_ASYNC_STREAM)

    async def run() -> None:
        stream = await litellm.acompletion(
            model="anthropic/claude-3-haiku-20240307",
            messages=JOKE,
            api_base=server.origin,
            api_key="test-key",
            stream=True,
        )
        async with stream:
            async for _chunk in stream:
                break
            assert span_dicts(span_exporter) == []
        assert [s["status"] for s in span_dicts(span_exporter)] == ["UNSET"]

    asyncio.run(run())


def test_api_error_fails_the_span_and_reaches_the_caller(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """An API error (no recording: the server answers 418) reaches the application as
    LiteLLM's own exception, unchanged; the span is ERROR with ``error.type`` the HTTP
    status."""
    server = replay(OPENAI_CREATE)  # nothing at /v1/messages
    with pytest.raises(litellm.exceptions.BadRequestError) as raised:
        claude(server, num_retries=0)
    [span] = span_dicts(span_exporter)
    event = span["events"][0]["attributes"]
    assert event["exception.type"] == (
        f"{type(raised.value).__module__}.{type(raised.value).__qualname__}"
    )
    assert span["status_description"] == event["exception.message"] == str(raised.value)
    event["exception.message"] = span["status_description"] = "<message>"
    assert [span] == snapshot(
        [
            {
                "name": "chat claude-3-opus-20240229",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 3000000000,
                "status": "ERROR",
                "status_description": "<message>",
                "attributes": {
                    "gen_ai.request.max_tokens": 1024,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "anthropic",
                    "gen_ai.request.model": "claude-3-opus-20240229",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "error.type": "418",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Tell me a joke about OpenTelemetry"}
                            ],
                        }
                    ],
                },
                "events": [
                    {
                        "name": "exception",
                        "timestamp": 2000000000,
                        "attributes": {
                            "exception.type": "litellm.exceptions.BadRequestError",
                            "exception.message": "<message>",
                            "exception.stacktrace": "<traceback>",
                        },
                    }
                ],
            }
        ]
    )


def test_a_server_error_fails_the_span_and_reaches_the_caller(
    replay: Replay, span_exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """A 5xx (the recorded Anthropic response served with status 503: no recording holds
    a server error) on LiteLLM's own HTTP code, no retries: LiteLLM's exception reaches the
    application unchanged; the span is ERROR with ``error.type`` the HTTP status."""
    server = replay(derived_cassette(ANTHROPIC_CREATE, tmp_path, [], status=503))
    with pytest.raises(litellm.exceptions.ServiceUnavailableError) as raised:
        claude(server, num_retries=0)
    assert len(server.requests) == 1
    [span] = span_dicts(span_exporter, drop=("gen_ai.input.messages",))
    event = span["events"][0]["attributes"]
    assert event["exception.message"] == str(raised.value)
    assert str(raised.value).startswith(span["status_description"])  # cut to a bound
    event["exception.message"] = span["status_description"] = "<message>"
    assert [span] == snapshot(
        [
            {
                "name": "chat claude-3-opus-20240229",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 3000000000,
                "status": "ERROR",
                "status_description": "<message>",
                "attributes": {
                    "gen_ai.request.max_tokens": 1024,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "anthropic",
                    "gen_ai.request.model": "claude-3-opus-20240229",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "error.type": "503",
                },
                "events": [
                    {
                        "name": "exception",
                        "timestamp": 2000000000,
                        "attributes": {
                            "exception.type": "litellm.exceptions.ServiceUnavailableError",
                            "exception.message": "<message>",
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
    the response content reader) is logged; the call returns and the span ends."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")

    def broken(msg: Any) -> list[dict[str, Any]]:
        raise RuntimeError("telemetry bug")

    monkeypatch.setattr(litellm_patch, "message_content", broken)
    reply = claude(replay(ANTHROPIC_CREATE))
    assert reply.choices
    assert [s["name"] for s in span_dicts(span_exporter)] == ["chat claude-3-opus-20240229"]


@pytest.mark.semconv_exempt(
    "gen_ai.provider.name of a provider the registry does not list: a custom value, as the"
    " conventions allow for this open enum"
)
def test_an_unroutable_model_fails_with_litellms_error(
    span_exporter: InMemorySpanExporter,
) -> None:
    """A model LiteLLM cannot route: LiteLLM's own error reaches the application; the
    span names the relay as the provider (all that is known) and the model as given."""
    with pytest.raises(litellm.exceptions.BadRequestError):
        litellm.completion(model="no-such-model", messages=JOKE, api_key="test-key")
    [span] = span_dicts(span_exporter)
    assert span["status"] == "ERROR"
    assert span["attributes"]["gen_ai.provider.name"] == "litellm"
    assert span["attributes"]["gen_ai.request.model"] == "no-such-model"


def test_no_content_keeps_only_the_requested_tool_calls(
    replay: Replay, span_exporter: InMemorySpanExporter, tracer_provider: Any
) -> None:
    """Without content capture the prompt and the tool definitions are not recorded; the
    tool calls the model asked for still are (the judge's evidence)."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="NO_CONTENT")
    server = replay(ANTHROPIC_TOOLS)
    litellm.completion(
        model="anthropic/claude-3-5-sonnet-20240620",
        messages=WEATHER,
        tools=WEATHER_TOOLS,
        api_base=server.origin,
        api_key="test-key",
    )
    [span] = span_dicts(span_exporter)
    attributes = span["attributes"]
    assert not {"gen_ai.input.messages", "gen_ai.tool.definitions"} & set(attributes)
    parts = attributes["gen_ai.output.messages"][0]["parts"]
    assert [(p["type"], p["name"]) for p in parts] == [
        ("tool_call", "get_weather"),
        ("tool_call", "get_time"),
    ]


def test_sdk_outside_the_supported_range_is_left_unpatched(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A LiteLLM release outside the tested range: one warning naming the range, nothing
    patched (the application runs untraced rather than on guessed internals)."""
    assert_left_unpatched_outside_the_range(litellm_patch.SPEC, caplog)


def test_uninstrument_restores_litellm_and_instrument_patches_it_again(
    replay: Replay, span_exporter: InMemorySpanExporter, tracer_provider: Any
) -> None:
    """``uninstrument()`` puts LiteLLM's own functions back (a call makes no span);
    ``instrument()`` again traces the next call."""
    server = replay(ANTHROPIC_CREATE)
    assert_uninstrument_round_trip(
        [(litellm, "completion"), (litellm, "acompletion")],
        lambda: claude(server),
        span_exporter,
        tracer_provider,
        "chat claude-3-opus-20240229",
    )


def test_litellm_imported_after_instrument_is_patched_on_import() -> None:
    """Importing tracejudge and calling ``instrument()`` imports no LiteLLM; importing
    LiteLLM afterwards patches it (a fresh interpreter)."""
    code = textwrap.dedent(
        """
        import os, sys
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        import tracejudge
        from opentelemetry.sdk.trace import TracerProvider
        tracejudge.instrument(tracer_provider=TracerProvider())
        assert "litellm" not in sys.modules
        import litellm
        print(hasattr(litellm.completion, "__tracejudge_wrapped__"))
        print(hasattr(litellm.acompletion, "__tracejudge_wrapped__"))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]
    assert importlib.util.find_spec("litellm") is not None


def test_a_function_wrapped_by_another_instrumentor_is_left_to_it(
    tracer_provider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A ``litellm.completion`` already wrapped from outside LiteLLM (a ``functools.wraps``
    wrapper defined here, standing in for OpenInference's LiteLLM instrumentor) is not
    wrapped again: one warning names it, ``acompletion`` is still patched."""
    tracejudge.uninstrument()
    _patcher.reset_warnings()
    original = litellm.completion

    @functools.wraps(original)
    def foreign(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs)

    litellm.completion = foreign
    try:
        with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
            tracejudge.instrument(tracer_provider=tracer_provider)
        assert litellm.completion is foreign
        assert getattr(litellm.acompletion, _patcher.WRAPPED_MARK, None) is not None
        warnings = [r.getMessage() for r in caplog.records if "already wrapped" in r.getMessage()]
        assert len(warnings) == 1
        assert "litellm.completion is already wrapped by" in warnings[0]
    finally:
        tracejudge.uninstrument()
        litellm.completion = original


def test_a_wrapper_from_a_folder_named_like_the_sdk_is_another_instrumentors() -> None:
    """Whether a ``functools.wraps`` wrapper is the SDK's own is asked of the SDK's package
    folders, not of its name in the path: an application's wrapper in ``.../litellm/app.py``
    (a checkout named after the SDK; this repository's worktree was one) is foreign, and a
    function of LiteLLM's own modules is not."""
    own = litellm.completion.__tracejudge_wrapped__  # LiteLLM's (itself a functools wrapper)
    namespace: dict[str, Any] = {"functools": functools, "original": own}
    source = (
        "@functools.wraps(original)\n"
        "def wrapper(*args, **kwargs):\n"
        "    return original(*args, **kwargs)\n"
    )
    exec(compile(source, "/home/dev/litellm/app.py", "exec"), namespace)
    assert _patcher.wrapped_by_other_instrumentor(namespace["wrapper"], "litellm") == (
        "/home/dev/litellm/app.py"
    )
    assert _patcher.wrapped_by_other_instrumentor(own, "litellm") is None


def test_a_mistral_model_names_mistral_ai(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``mistral/...`` (LiteLLM's Mistral route, OpenAI's shapes): the provider is the
    registry's ``mistral_ai``, as the ``mistralai`` patch names it, and the model the one
    Mistral is asked for."""
    server = replay("mistral/test_mistralai_chat_legacy.yaml")
    reply = litellm.completion(
        model="mistral/mistral-tiny", messages=JOKE, api_base=server.base_url, api_key="test-key"
    )
    assert server.requests[0].path == "/v1/chat/completions"
    [span] = span_dicts(span_exporter, drop=("gen_ai.output.messages",))
    assert span == snapshot(
        {
            "name": "chat mistral-tiny",
            "kind": "CLIENT",
            "context": {"trace_id": 1, "span_id": 1},
            "parent": None,
            "start_time": 1000000000,
            "end_time": 2000000000,
            "status": "UNSET",
            "attributes": {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "mistral_ai",
                "gen_ai.request.model": "mistral-tiny",
                "server.address": "127.0.0.1",
                "server.port": "<port>",
                "gen_ai.input.messages": [
                    {
                        "role": "user",
                        "parts": [
                            {"type": "text", "content": "Tell me a joke about OpenTelemetry"}
                        ],
                    }
                ],
                "gen_ai.response.id": "e9459fcd56c742e0875167c9926c6aae",
                "gen_ai.response.model": "mistral-tiny",
                "gen_ai.response.finish_reasons": ["stop"],
                "gen_ai.usage.input_tokens": 11,
                "gen_ai.usage.output_tokens": 96,
            },
        }
    )
    assert reply.id == span["attributes"]["gen_ai.response.id"]


def test_a_streamed_tool_call_is_rebuilt_from_litellms_chunks(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A stream that asks for two tools (Anthropic ``tool_use`` blocks streamed as
    ``input_json_delta`` pieces, turned by LiteLLM into OpenAI tool-call deltas): the span's
    output has both calls with their ids and parsed arguments after the text."""
    server = replay("anthropic/test_anthropic_tools_streaming_with_events_with_content.yaml")
    stream = litellm.completion(
        model="anthropic/claude-3-5-sonnet-20240620",
        messages=WEATHER,
        tools=WEATHER_TOOLS,
        api_base=server.origin,
        api_key="test-key",
        stream=True,
    )
    ids = [tc.id for c in stream for tc in c.choices[0].delta.tool_calls or () if tc.id]
    [span] = span_dicts(span_exporter)
    [message] = span["attributes"]["gen_ai.output.messages"]
    calls = [p for p in message["parts"] if p["type"] == "tool_call"]
    assert len(ids) == 2
    assert [c["id"] for c in calls] == ids
    assert [(c["name"], c["arguments"]) for c in calls] == snapshot(
        [
            ("get_weather", {"location": "New York, NY", "unit": "fahrenheit"}),
            ("get_time", {"timezone": "America/New_York"}),
        ]
    )
    assert message["finish_reason"] == "tool_call"
