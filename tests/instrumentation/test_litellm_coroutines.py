"""LiteLLM's sync functions asked for a coroutine (``completion(..., acompletion=True)``),
against the real ``litellm`` package and recorded API responses.

The request is made when the application awaits the coroutine: the span covers that, and
ends with its response, stream or exception (``instrumentation._deferred``). Replayed over
loopback HTTP by ``tests.support.replay.ReplayServer`` (the cassettes ``test_litellm.py``
replays); spans are compared whole, as snapshots, and checked against the pinned
convention registry.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from inline_snapshot import snapshot
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: the packaged prices
import litellm

from tests.support.litellm_calls import (
    ANTHROPIC_ASYNC_STREAM,
    ANTHROPIC_CREATE,
    JOKE,
    OPENAI_CREATE,
    TEST,
    claude,
    masked_id,
)
from tests.support.replay import ReplayServer, derived_cassette
from tests.support.spans import span_dicts

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]


def test_completion_asked_for_a_coroutine_is_traced_to_its_result(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``completion(..., acompletion=True)`` returns a coroutine; the request is made when
    the application awaits it. The span is open until then (nothing ended when
    ``completion`` returned) and ends with the response, as an ``acompletion`` call's."""
    server = replay(ANTHROPIC_CREATE)
    pending = claude(server, acompletion=True)
    assert asyncio.iscoroutine(pending)
    assert span_dicts(span_exporter) == []
    assert server.requests == []
    reply = asyncio.run(pending)
    assert masked_id(span_dicts(span_exporter, drop=("gen_ai.output.messages",)), reply.id) == (
        snapshot(
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
                        "gen_ai.operation.name": "chat",
                        "gen_ai.provider.name": "anthropic",
                        "gen_ai.request.model": "claude-3-opus-20240229",
                        "server.address": "127.0.0.1",
                        "server.port": "<port>",
                        "gen_ai.input.messages": [
                            {
                                "role": "user",
                                "parts": [
                                    {
                                        "type": "text",
                                        "content": "Tell me a joke about OpenTelemetry",
                                    }
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
                }
            ]
        )
    )


def test_a_coroutine_through_the_openai_sdks_create_gives_one_span(
    replay: Replay, span_exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """``azure/...`` with ``acompletion=True``: the coroutine calls the ``openai`` SDK's
    ``AsyncCompletions.create`` (which the ``openai`` patch wraps) when it is awaited,
    with LiteLLM's span current then, so the SDK call makes no second span."""
    recorded = derived_cassette(
        OPENAI_CREATE, tmp_path, [], path="/openai/deployments/gpt-4o-mini/chat/completions"
    )
    server = replay(recorded)
    pending = litellm.completion(
        model="azure/gpt-4o-mini",
        messages=TEST,
        api_base=server.origin,
        api_key="test-key",
        api_version="2024-10-21",
        acompletion=True,
    )
    reply = asyncio.run(pending)
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


def test_a_coroutine_of_a_stream_is_traced_to_the_streams_end(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``acompletion=True, stream=True``: the coroutine gives an async stream; the span
    ends with its last chunk, its deltas joined."""
    server = replay(ANTHROPIC_ASYNC_STREAM)

    async def read() -> tuple[str, str]:
        stream = await litellm.completion(
            model="anthropic/claude-3-haiku-20240307",
            messages=JOKE,
            api_base=server.origin,
            api_key="test-key",
            stream=True,
            acompletion=True,
        )
        assert span_dicts(span_exporter) == []
        chunks = [chunk async for chunk in stream]
        return chunks[0].id, "".join(c.choices[0].delta.content or "" for c in chunks)

    response_id, text = asyncio.run(read())
    spans = masked_id(span_dicts(span_exporter), response_id)
    assert spans[0]["attributes"]["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": text}
    ]
    assert span_dicts(span_exporter, drop=("gen_ai.output.messages", "gen_ai.response.id")) == (
        snapshot(
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
                                    {
                                        "type": "text",
                                        "content": "Tell me a joke about OpenTelemetry",
                                    }
                                ],
                            }
                        ],
                        "gen_ai.response.model": "claude-3-haiku-20240307",
                        "gen_ai.response.finish_reasons": ["stop"],
                    },
                }
            ]
        )
    )


def test_an_api_error_of_a_coroutine_fails_the_span_when_awaited(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A recorded API error (OpenAI's 404 for an unknown model) raised by the awaited
    coroutine reaches the application as LiteLLM's exception, unchanged; the span is
    ERROR with ``error.type`` the HTTP status and the exception event."""
    server = replay("openai/test_chat_completion_404.yaml")
    pending = litellm.completion(
        model="openai/this-model-does-not-exist",
        messages=TEST,
        api_base=server.base_url,
        api_key="test-key",
        num_retries=0,
        acompletion=True,
    )
    with pytest.raises(litellm.exceptions.NotFoundError) as raised:
        asyncio.run(pending)
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
                "name": "chat this-model-does-not-exist",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 3000000000,
                "status": "ERROR",
                "status_description": "<message>",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "this-model-does-not-exist",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "error.type": "404",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "Say this is a test"}],
                        }
                    ],
                },
                "events": [
                    {
                        "name": "exception",
                        "timestamp": 2000000000,
                        "attributes": {
                            "exception.type": "litellm.exceptions.NotFoundError",
                            "exception.message": "<message>",
                            "exception.stacktrace": "<traceback>",
                        },
                    }
                ],
            }
        ]
    )


def test_a_coroutine_never_awaited_ends_its_span_when_collected(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A coroutine from ``acompletion=True`` dropped without being awaited: no request is
    made, and its span ends when the coroutine is collected, with the request only and no
    error status (not running it was the application's choice)."""
    server = replay(ANTHROPIC_CREATE)
    pending = claude(server, acompletion=True)
    with pytest.warns(RuntimeWarning, match="was never awaited"):
        del pending  # no reference cycle: collected here
    assert server.requests == []
    assert span_dicts(span_exporter) == snapshot(
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
                },
            }
        ]
    )
