"""Embeddings: ``embeddings {model}`` spans with token usage and requested dimensions.

Why: embeddings calls are part of a run's cost and latency budget (budget rules), even
though they carry no messages; input text is not recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv
from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation.openai._common import PROVIDER, get, server_of


def start(runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> ModelCallTelemetry:
    """Start the ``embeddings {model}`` span."""
    address, port = server_of(resource)
    return open_embeddings(runtime, PROVIDER, kwargs.get("model"), kwargs, address, port)


def open_embeddings(
    runtime: Runtime,
    provider: str,
    model: Any,
    kwargs: Mapping[str, Any],
    address: str | None,
    port: int | None,
) -> ModelCallTelemetry:
    """Start an ``embeddings {model}`` span whose request has OpenAI's embeddings
    parameters (``encoding_format``, ``dimensions``; LiteLLM takes the same)."""
    attrs: dict[str, AttributeValue] = {}
    fmt = kwargs.get("encoding_format")
    if isinstance(fmt, str):
        attrs[semconv.GEN_AI_REQUEST_ENCODING_FORMATS] = (fmt,)
    dims = kwargs.get("dimensions")
    if isinstance(dims, int) and not isinstance(dims, bool):
        attrs[semconv.GEN_AI_EMBEDDINGS_DIMENSION_COUNT] = dims
    return ModelCallTelemetry(
        runtime,
        semconv.GenAiOperationNameValues.EMBEDDINGS,
        provider,
        model if isinstance(model, str) else None,
        attrs,
        address,
        port,
    )


def finish(call: ModelCallTelemetry, response: Any) -> None:
    """Record the response model, the input token count and the dimension count of the
    embeddings returned (a value of the wrong type is left out: a malformed response is
    recorded as far as it is well-formed, never raised on)."""
    extra: dict[str, AttributeValue] = {}
    data = get(response, "data")
    if isinstance(data, (list, tuple)) and data:
        first = get(data[0], "embedding")
        if isinstance(first, list) and first:  # base64 embeddings are strings: no count
            extra[semconv.GEN_AI_EMBEDDINGS_DIMENSION_COUNT] = len(first)
    model = get(response, "model")
    tokens = get(get(response, "usage"), "prompt_tokens")
    call.set_response(
        response_model=model if isinstance(model, str) else None,
        input_tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
        extra=extra,
    )
