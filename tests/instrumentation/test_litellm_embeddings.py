"""LiteLLM's ``embedding``/``aembedding`` as GenAI ``embeddings`` spans, against the real
``litellm`` package and a recorded OpenAI embeddings response.

Every test drives the installed ``litellm`` over loopback HTTP to
``tests.support.replay.ReplayServer``, which replays the OpenAI embeddings cassettes the
``openai`` tests replay (open-telemetry/opentelemetry-python-contrib, Apache-2.0; see
tests/fixtures/MANIFEST.tsv). LiteLLM's ``openai/`` and ``azure/`` routes call the real
``openai`` SDK, which tracejudge patches too: the LiteLLM span is the one span. Spans are
compared whole, as snapshots, and checked against the pinned convention registry.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: the packaged prices
import litellm

import tracejudge
from tests.support.replay import ReplayServer, derived_cassette
from tests.support.spans import span_dicts
from tracejudge.instrumentation.litellm import _patch as litellm_patch

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]
EMBEDDINGS = "openai/test_embeddings_with_content.yaml"
NOT_FOUND = "openai/test_embeddings_model_not_found.yaml"
TEXT = "This is a test for embeddings"
MODEL = "openai/text-embedding-3-small"


def embed(server: ReplayServer, **kwargs: Any) -> Any:
    return litellm.embedding(
        model=MODEL, input=TEXT, api_base=server.base_url, api_key="test-key", **kwargs
    )


def test_embedding_is_an_embeddings_span(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``embedding``: one CLIENT span ``embeddings {model}`` with the provider LiteLLM
    routed to, the model it asked for (no ``openai/`` prefix), the input token count, the
    response model and the embeddings' dimension count; no input text."""
    server = replay(EMBEDDINGS)
    reply = embed(server)
    assert server.requests[0].path == "/v1/embeddings"
    assert server.requests[0].json() == {"model": "text-embedding-3-small", "input": TEXT}
    assert len(reply.data[0]["embedding"]) == 1536
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "embeddings text-embedding-3-small",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "embeddings",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "text-embedding-3-small",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.embeddings.dimension.count": 1536,
                    "gen_ai.response.model": "text-embedding-3-small",
                    "gen_ai.usage.input_tokens": 6,
                },
            }
        ]
    )


def test_aembedding_with_requested_format_and_dimensions_is_one_span(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``aembedding`` with ``encoding_format`` and ``dimensions``: they are the span's
    ``gen_ai.request.encoding_formats`` and ``gen_ai.embeddings.dimension.count``. LiteLLM
    calls the ``openai`` SDK's ``AsyncEmbeddings.create`` (which the ``openai`` patch
    wraps) inside the LiteLLM span: one span. With LiteLLM's function unwrapped, the same
    call makes the ``openai`` patch's span: without the duplicate check there would be
    two."""
    server = replay(EMBEDDINGS)

    def call() -> Any:
        return asyncio.run(
            litellm.aembedding(
                model=MODEL,
                input=[TEXT],
                api_base=server.base_url,
                api_key="test-key",
                encoding_format="float",
                dimensions=1536,
            )
        )

    call()
    assert server.requests[0].json() == {
        "model": "text-embedding-3-small",
        "input": [TEXT],
        "encoding_format": "float",
        "dimensions": 1536,
    }
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "embeddings text-embedding-3-small",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.encoding_formats": ["float"],
                    "gen_ai.operation.name": "embeddings",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "text-embedding-3-small",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.embeddings.dimension.count": 1536,
                    "gen_ai.response.model": "text-embedding-3-small",
                    "gen_ai.usage.input_tokens": 6,
                },
            }
        ]
    )
    span_exporter.clear()
    wrapper = litellm.aembedding
    litellm.aembedding = wrapper.__tracejudge_wrapped__  # put back before uninstrument()
    try:
        call()
    finally:
        litellm.aembedding = wrapper
    [sdk_span] = span_dicts(span_exporter)
    assert sdk_span["name"] == "embeddings text-embedding-3-small"


def test_azure_embedding_names_azure_and_is_one_span(
    replay: Replay, span_exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """``azure/...``: LiteLLM calls the ``openai`` SDK's ``Embeddings.create`` on its
    ``AzureOpenAI`` client; the one span is LiteLLM's, provider ``azure.ai.openai`` (the
    ``openai`` patch's span would say ``openai``)."""
    recorded = derived_cassette(
        EMBEDDINGS, tmp_path, [], path="/openai/deployments/text-embedding-3-small/embeddings"
    )
    server = replay(recorded)
    litellm.embedding(
        model="azure/text-embedding-3-small",
        input=TEXT,
        api_base=server.origin,
        api_key="test-key",
        api_version="2024-10-21",
    )
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "embeddings text-embedding-3-small",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "embeddings",
                    "gen_ai.provider.name": "azure.ai.openai",
                    "gen_ai.request.model": "text-embedding-3-small",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.embeddings.dimension.count": 1536,
                    "gen_ai.response.model": "text-embedding-3-small",
                    "gen_ai.usage.input_tokens": 6,
                },
            }
        ]
    )


def test_positional_arguments_of_aembedding_are_read_as_keywords(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``aembedding(model, input)`` positionally (``aembedding`` takes ``*args``, passed
    on to ``embedding``): the span reads them by ``embedding``'s parameters."""
    server = replay(EMBEDDINGS)
    asyncio.run(litellm.aembedding(MODEL, TEXT, api_base=server.base_url, api_key="test-key"))
    [span] = span_dicts(span_exporter)
    assert span["name"] == "embeddings text-embedding-3-small"
    assert span["attributes"]["gen_ai.provider.name"] == "openai"


def test_embedding_asked_for_a_coroutine_is_traced_to_its_result(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``embedding(..., aembedding=True)`` returns a coroutine; the span ends with the
    response when it is awaited, as an ``aembedding`` call's."""
    server = replay(EMBEDDINGS)
    pending = embed(server, aembedding=True)
    assert asyncio.iscoroutine(pending)
    assert span_dicts(span_exporter) == []
    asyncio.run(pending)
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "embeddings text-embedding-3-small",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "embeddings",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "text-embedding-3-small",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.embeddings.dimension.count": 1536,
                    "gen_ai.response.model": "text-embedding-3-small",
                    "gen_ai.usage.input_tokens": 6,
                },
            }
        ]
    )


def test_a_recorded_api_error_fails_the_span_and_reaches_the_caller(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """OpenAI's recorded 404 for an unknown model, sync and async: the application gets
    LiteLLM's exception, unchanged; each span is ERROR with ``error.type`` the HTTP status
    and the exception event."""
    server = replay(NOT_FOUND)
    kwargs: dict[str, Any] = {
        "model": "openai/non-existent-embedding-model",
        "input": "This is a test for embeddings with bad model",
        "api_base": server.base_url,
        "api_key": "test-key",
    }
    with pytest.raises(litellm.exceptions.NotFoundError) as sync_error:
        litellm.embedding(**kwargs)
    with pytest.raises(litellm.exceptions.NotFoundError) as async_error:
        asyncio.run(litellm.aembedding(**kwargs))
    spans = span_dicts(span_exporter)
    for span, raised in zip(spans, (sync_error, async_error), strict=True):
        event = span["events"][0]["attributes"]
        assert span["status_description"] == event["exception.message"] == str(raised.value)
        event["exception.message"] = span["status_description"] = "<message>"
    assert spans == snapshot(
        [
            {
                "name": "embeddings non-existent-embedding-model",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 3000000000,
                "status": "ERROR",
                "status_description": "<message>",
                "attributes": {
                    "gen_ai.operation.name": "embeddings",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "non-existent-embedding-model",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "error.type": "404",
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
            },
            {
                "name": "embeddings non-existent-embedding-model",
                "kind": "CLIENT",
                "context": {"trace_id": 2, "span_id": 2},
                "parent": None,
                "start_time": 4000000000,
                "end_time": 6000000000,
                "status": "ERROR",
                "status_description": "<message>",
                "attributes": {
                    "gen_ai.operation.name": "embeddings",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "non-existent-embedding-model",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "error.type": "404",
                },
                "events": [
                    {
                        "name": "exception",
                        "timestamp": 5000000000,
                        "attributes": {
                            "exception.type": "litellm.exceptions.NotFoundError",
                            "exception.message": "<message>",
                            "exception.stacktrace": "<traceback>",
                        },
                    }
                ],
            },
        ]
    )


def test_a_malformed_response_is_recorded_as_far_as_it_is_well_formed(
    replay: Replay, span_exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """The recorded response with the token count a string and the model a number (no
    recording holds one; LiteLLM passes both on): the call returns, and the span leaves
    out what has the wrong type instead of raising (errors are raised in these tests) or
    breaking the conventions' types (checked on every span)."""
    recorded = derived_cassette(
        EMBEDDINGS,
        tmp_path,
        [
            ('"prompt_tokens": 6', '"prompt_tokens": "six"'),
            ('"model": "text-', '"model": 3, "x": "'),
        ],
    )
    reply = embed(replay(recorded))
    assert reply.usage.prompt_tokens == "six"
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "embeddings text-embedding-3-small",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "embeddings",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "text-embedding-3-small",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.embeddings.dimension.count": 1536,
                },
            }
        ]
    )


def test_a_response_litellm_cannot_read_fails_the_span_with_litellms_error(
    replay: Replay, span_exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """The recorded response with ``usage`` a number: LiteLLM rejects it with its own
    error, which reaches the application unchanged; the span is ERROR with the
    ``error.type`` LiteLLM's error carries."""
    recorded = derived_cassette(EMBEDDINGS, tmp_path, [('"usage": {', '"usage": 7, "x": {')])
    with pytest.raises(litellm.exceptions.InternalServerError) as raised:
        embed(replay(recorded))
    [span] = span_dicts(span_exporter)
    event = span["events"][0]["attributes"]
    assert event["exception.message"] == str(raised.value)
    assert str(raised.value).startswith(span["status_description"])  # cut to a bound
    event["exception.message"] = span["status_description"] = "<message>"
    assert [span] == snapshot(
        [
            {
                "name": "embeddings text-embedding-3-small",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 3000000000,
                "status": "ERROR",
                "status_description": "<message>",
                "attributes": {
                    "gen_ai.operation.name": "embeddings",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "text-embedding-3-small",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "error.type": "500",
                },
                "events": [
                    {
                        "name": "exception",
                        "timestamp": 2000000000,
                        "attributes": {
                            "exception.type": "litellm.exceptions.InternalServerError",
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
    """With the default ``raise_internal_errors=False``, a response translation that
    raises is logged; the call returns its response and the span ends."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")

    def broken(call: Any, response: Any) -> None:
        raise RuntimeError("telemetry bug")

    monkeypatch.setattr(litellm_patch.EMBEDDING, "finish", broken)
    reply = embed(replay(EMBEDDINGS))
    assert reply.data
    assert [(s["name"], s["status"]) for s in span_dicts(span_exporter)] == [
        ("embeddings text-embedding-3-small", "UNSET")
    ]
