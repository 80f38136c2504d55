"""Per-call overhead of the OpenAI patch versus one bare SDK span with the same attributes.

Run: ``.venv/bin/python -m tests.support.overhead``. Why a script and not a test: timing
on a shared machine is noisy; the script interleaves blocks of both variants and keeps
the minimum of each, which is stable enough to compare (target: at most 1.5x).
The SDK call itself is replaced by a function returning a pre-parsed recorded
``ChatCompletion`` so only telemetry work is measured.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import yaml
from openai.types.chat import ChatCompletion
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from tests.support.replay import CASSETTE_ROOT
from tracejudge.instrumentation import openai as tj_openai
from tracejudge.instrumentation._provider import wrap_method
from tracejudge.instrumentation._runtime import Runtime


class _NullExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _Url:
    host = "api.openai.com"
    port = None
    scheme = "https"


class _Client:
    base_url = _Url()


class _Resource:
    _client = _Client()


def _block(fn: Callable[[], Any], n: int = 3000) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main(rounds: int = 30) -> tuple[float, float]:
    """Return (bare span µs, tracejudge µs) per call; prints the ratio."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_NullExporter()))
    doc = yaml.safe_load(
        (CASSETTE_ROOT / "openai/test_chat_completion_with_content.yaml").read_text()
    )
    completion = ChatCompletion.model_validate(
        json.loads(doc["interactions"][0]["response"]["body"]["string"])
    )
    messages = [{"role": "user", "content": "Say this is a test"}]
    resource = _Resource()

    def original(self: Any, **kwargs: Any) -> ChatCompletion:
        return completion

    runtime = Runtime(tracer_provider=provider, capture_content="NO_CONTENT")
    wrapped = wrap_method(original, runtime=runtime, spec=tj_openai.SPEC, endpoint=tj_openai._CHAT)
    tracer = provider.get_tracer("bare")
    start_attrs: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "openai.api.type": "chat_completions",
        "server.address": "api.openai.com",
        "server.port": 443,
        "gen_ai.request.temperature": 0.5,
    }
    end_attrs: dict[str, AttributeValue] = {
        "gen_ai.response.id": "chatcmpl-1",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 5,
        "openai.response.system_fingerprint": "fp",
    }

    def bare() -> None:
        span = tracer.start_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=start_attrs)
        original(resource, model="gpt-4o-mini", messages=messages)
        span.set_attributes(end_attrs)
        span.end()

    def ours() -> None:
        wrapped(resource, model="gpt-4o-mini", messages=messages, temperature=0.5)

    _block(bare)
    _block(ours)
    best_bare = best_ours = float("inf")
    for _ in range(rounds):
        gc.collect()
        best_bare = min(best_bare, _block(bare))
        best_ours = min(best_ours, _block(ours))
    print(
        f"bare SDK span {best_bare:.1f} µs, tracejudge chat call {best_ours:.1f} µs, "
        f"ratio {best_ours / best_bare:.2f}"
    )
    return best_bare, best_ours


if __name__ == "__main__":
    main()
