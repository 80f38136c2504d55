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
    attrs: dict[str, AttributeValue] = {}
    fmt = kwargs.get("encoding_format")
    if isinstance(fmt, str):
        attrs[semconv.GEN_AI_REQUEST_ENCODING_FORMATS] = (fmt,)
    dims = kwargs.get("dimensions")
    if isinstance(dims, int) and not isinstance(dims, bool):
        attrs[semconv.GEN_AI_EMBEDDINGS_DIMENSION_COUNT] = dims
    model = kwargs.get("model")
    address, port = server_of(resource)
    return ModelCallTelemetry(
        runtime,
        semconv.GenAiOperationNameValues.EMBEDDINGS,
        PROVIDER,
        model if isinstance(model, str) else None,
        attrs,
        address,
        port,
    )


def finish(call: ModelCallTelemetry, response: Any) -> None:
    """Record the response model and input token count."""
    usage = get(response, "usage")
    extra: dict[str, AttributeValue] = {}
    data = get(response, "data") or ()
    if data and semconv.GEN_AI_EMBEDDINGS_DIMENSION_COUNT not in extra:
        first = get(data[0], "embedding")
        if isinstance(first, list) and first:
            extra[semconv.GEN_AI_EMBEDDINGS_DIMENSION_COUNT] = len(first)
    call.set_response(
        response_model=get(response, "model"),
        input_tokens=get(usage, "prompt_tokens"),
        extra=extra,
    )
