"""Responses API and embeddings spans from the real ``openai`` SDK and recorded responses.

Cassettes: open-telemetry/opentelemetry-python-contrib (Apache-2.0), replayed over
loopback HTTP by ``tests.support.replay.ReplayServer``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import openai
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.otel import PORT_MASK, TTFC_MASK, snap
from tests.support.replay import ReplayServer, derived_cassette

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]


def client(server: ReplayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)


def test_responses_create_basic(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """``responses.create`` is a ``chat`` span with instructions as system instructions,
    the output text, usage, and ``openai.api.type=responses``."""
    server = replay("openai/test_responses_create_basic[content_mode0].yaml")
    r = client(server).responses.create(
        model="gpt-4o-mini", input="Say this is a test", instructions="You are a helpful assistant."
    )
    [span] = span_exporter.get_finished_spans()
    assert snap(span) == {
        "name": "chat gpt-4o-mini",
        "kind": "CLIENT",
        "status": "UNSET",
        "attributes": {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "openai.api.type": "responses",
            "server.address": "127.0.0.1",
            "server.port": PORT_MASK,
            "gen_ai.input.messages": [
                {"role": "user", "parts": [{"type": "text", "content": "Say this is a test"}]}
            ],
            "gen_ai.system_instructions": [
                {"type": "text", "content": "You are a helpful assistant."}
            ],
            "gen_ai.response.id": r.id,
            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
            "gen_ai.response.finish_reasons": ["stop"],
            "gen_ai.usage.input_tokens": r.usage.input_tokens if r.usage else None,
            "gen_ai.usage.output_tokens": r.usage.output_tokens if r.usage else None,
            # reported as 0 by the API: recorded, not dropped
            "gen_ai.usage.cache_read.input_tokens": 0,
            "gen_ai.usage.reasoning.output_tokens": 0,
            "openai.response.service_tier": "default",
            "gen_ai.output.messages": [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": r.output_text}],
                    "finish_reason": "stop",
                }
            ],
        },
    }


def test_responses_tool_call(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """A ``function_call`` output item becomes a ``tool_call`` part with its call id."""
    server = replay("openai/test_responses_create_captures_tool_call_content[content_mode0].yaml")
    client(server).responses.create(
        model="gpt-4o-mini",
        input="What's the weather in Seattle right now?",
        tools=[
            {
                "type": "function",
                "name": "get_current_weather",
                "parameters": {"type": "object", "properties": {}},
                "strict": False,
            }
        ],
    )
    [span] = span_exporter.get_finished_spans()
    attrs = snap(span)["attributes"]
    assert attrs["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "finish_reason": "tool_call",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_90uO5LcGP5vTBTCrjyhYtWsA",
                    "name": "get_current_weather",
                    "arguments": {"location": "Seattle, WA"},
                }
            ],
        }
    ]
    assert attrs["gen_ai.tool.definitions"][0]["name"] == "get_current_weather"


def test_responses_streaming(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """A streamed response is recorded from its terminal ``response.completed`` event."""
    server = replay("openai/test_responses_create_streaming[content_mode0].yaml")
    stream = client(server).responses.create(
        model="gpt-4o-mini",
        input="Say this is a test",
        instructions="You are a helpful assistant.",
        stream=True,
    )
    deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
    [span] = span_exporter.get_finished_spans()
    attrs = snap(span)["attributes"]
    assert attrs["gen_ai.request.stream"] is True
    assert attrs["gen_ai.response.time_to_first_chunk"] == TTFC_MASK
    assert attrs["gen_ai.response.finish_reasons"] == ["stop"]
    assert attrs["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": "".join(deltas)}
    ]
    assert isinstance(attrs["gen_ai.usage.output_tokens"], int)


def test_responses_stream_helper(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """The SDK's ``responses.stream()`` helper works on the wrapped stream and is traced."""
    server = replay("openai/test_responses_create_streaming[content_mode0].yaml")
    with client(server).responses.stream(model="gpt-4o-mini", input="Say this is a test") as stream:
        final = stream.get_final_response()
    [span] = span_exporter.get_finished_spans()
    assert snap(span)["attributes"]["gen_ai.response.id"] == final.id


def test_responses_api_error(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """A 400 from the Responses API marks the span ERROR with ``error.type`` = ``400``."""
    server = replay("openai/test_responses_create_api_error[content_mode0].yaml")
    with pytest.raises(openai.BadRequestError):
        client(server).responses.create(model="this-model-does-not-exist", input="Hello")
    [span] = span_exporter.get_finished_spans()
    data = snap(span)
    assert data["status"] == "ERROR"
    assert data["attributes"]["error.type"] == "400"
    assert data["name"] == "chat this-model-does-not-exist"


def test_embeddings_span(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """Embeddings calls are ``embeddings {model}`` CLIENT spans with input tokens and the
    dimension count, and no message content."""
    server = replay("openai/test_embeddings_with_content.yaml")
    r = client(server).embeddings.create(
        model="text-embedding-3-small", input="This is a test for embeddings"
    )
    [span] = span_exporter.get_finished_spans()
    assert snap(span) == {
        "name": "embeddings text-embedding-3-small",
        "kind": "CLIENT",
        "status": "UNSET",
        "attributes": {
            "gen_ai.operation.name": "embeddings",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "text-embedding-3-small",
            "server.address": "127.0.0.1",
            "server.port": PORT_MASK,
            "gen_ai.response.model": "text-embedding-3-small",
            "gen_ai.usage.input_tokens": 6,
            "gen_ai.embeddings.dimension.count": len(r.data[0].embedding),
        },
    }


def test_embeddings_malformed_usage_and_model_are_left_out(
    replay: Replay, span_exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """The recorded response with the token count a string and the model a number (the
    SDK passes both on; no recording holds one): the span leaves them out rather than
    break the conventions' types (checked on every span) or raise."""
    recorded = derived_cassette(
        "openai/test_embeddings_with_content.yaml",
        tmp_path,
        [
            ('"prompt_tokens": 6', '"prompt_tokens": "six"'),
            ('"model": "text-', '"model": 3, "x": "'),
        ],
    )
    r = client(replay(recorded)).embeddings.create(
        model="text-embedding-3-small", input="This is a test for embeddings"
    )
    tokens: object = r.usage.prompt_tokens  # typed int; the SDK passes the string on
    assert tokens == "six"
    [span] = span_exporter.get_finished_spans()
    assert snap(span)["attributes"] == {
        "gen_ai.operation.name": "embeddings",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "text-embedding-3-small",
        "server.address": "127.0.0.1",
        "server.port": PORT_MASK,
        "gen_ai.embeddings.dimension.count": 1536,
    }


def test_async_embeddings_error(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """An async embeddings 404 is traced as an error and re-raised unchanged."""
    server = replay("openai/test_async_embeddings_error_handling.yaml")

    async def main() -> None:
        c = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.NotFoundError):
            await c.embeddings.create(model="non-existent-embedding-model", input="x")

    asyncio.run(main())
    [span] = span_exporter.get_finished_spans()
    assert snap(span)["status"] == "ERROR"
    assert snap(span)["attributes"]["error.type"] == "404"


def test_responses_parse_is_traced(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """``responses.parse`` (structured outputs) is traced like ``responses.create``."""
    server = replay("openai/test_responses_create_basic[content_mode0].yaml")
    r = client(server).responses.parse(model="gpt-4o-mini", input="Say this is a test")
    [span] = span_exporter.get_finished_spans()
    attrs = snap(span)["attributes"]
    assert attrs["openai.api.type"] == "responses"
    assert attrs["gen_ai.response.id"] == r.id
