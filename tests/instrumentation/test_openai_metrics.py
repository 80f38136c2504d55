"""GenAI client metrics (``gen_ai.client.operation.duration`` and ``token.usage``).

Real ``openai`` SDK against recorded responses; metrics read with the OTel SDK's
``InMemoryMetricReader``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.support.otel import histogram_points
from tests.support.replay import ReplayServer
from tracejudge.instrumentation._runtime import DURATION_BUCKETS, TOKEN_BUCKETS

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]
SAY_TEST: list[Any] = [{"role": "user", "content": "Say this is a test"}]
DURATION = "gen_ai.client.operation.duration"
TOKENS = "gen_ai.client.token.usage"


def test_duration_and_token_usage_per_conventions(
    replay: Replay, otel_metrics: tuple[MeterProvider, InMemoryMetricReader]
) -> None:
    """One successful call records one duration (s, convention buckets) and one input and
    one output token count, with the conventions' metric attributes."""
    server = replay("openai/test_chat_completion_with_content.yaml")
    c = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    c.chat.completions.create(model="gpt-4o-mini", messages=SAY_TEST)
    reader = otel_metrics[1]
    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "server.address": "127.0.0.1",
        "server.port": server.port,
    }
    [duration] = histogram_points(reader, DURATION)
    assert dict(duration.attributes or {}) == common
    assert duration.count == 1
    assert tuple(duration.explicit_bounds) == DURATION_BUCKETS
    assert 0 < duration.sum < 60
    tokens = {
        dict(p.attributes or {})["gen_ai.token.type"]: p for p in histogram_points(reader, TOKENS)
    }
    assert set(tokens) == {"input", "output"}
    assert (tokens["input"].sum, tokens["output"].sum) == (12, 5)
    assert dict(tokens["output"].attributes or {}) == {**common, "gen_ai.token.type": "output"}
    assert tuple(tokens["input"].explicit_bounds) == tuple(float(b) for b in TOKEN_BUCKETS)


def test_metric_units(
    replay: Replay, otel_metrics: tuple[MeterProvider, InMemoryMetricReader]
) -> None:
    """Units are exactly ``s`` and ``{token}`` (a common conformance finding elsewhere)."""
    server = replay("openai/test_chat_completion_with_content.yaml")
    openai.OpenAI(base_url=server.base_url, api_key="k").chat.completions.create(
        model="gpt-4o-mini", messages=SAY_TEST
    )
    data = otel_metrics[1].get_metrics_data()
    assert data is not None
    units = {
        m.name: m.unit
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }
    assert units == {DURATION: "s", TOKENS: "{token}"}


def test_error_recorded_on_duration_without_tokens(
    replay: Replay, otel_metrics: tuple[MeterProvider, InMemoryMetricReader]
) -> None:
    """A failed call records its duration with ``error.type`` and no token counts."""
    server = replay("openai/test_embeddings_model_not_found.yaml")
    c = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.NotFoundError):
        c.embeddings.create(model="non-existent-embedding-model", input="x")
    [duration] = histogram_points(otel_metrics[1], DURATION)
    attrs = dict(duration.attributes or {})
    assert attrs["error.type"] == "404"
    assert attrs["gen_ai.operation.name"] == "embeddings"
    assert histogram_points(otel_metrics[1], TOKENS) == []


def test_streamed_usage_recorded(
    replay: Replay, otel_metrics: tuple[MeterProvider, InMemoryMetricReader]
) -> None:
    """Token usage carried by the last chunk of a stream reaches the metric too."""
    server = replay("openai/test_chat_completion_streaming.yaml")
    c = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    for _ in c.chat.completions.create(
        model="gpt-4", messages=SAY_TEST, stream=True, stream_options={"include_usage": True}
    ):
        pass
    sums = {
        dict(p.attributes or {})["gen_ai.token.type"]: p.sum
        for p in histogram_points(otel_metrics[1], TOKENS)
    }
    assert sums == {"input": 12, "output": 5}
