"""One configuration of the instrumentation benchmark, in its own process.

Instrumentors patch the OpenAI SDK globally and cannot all be undone cleanly, so every
configuration runs in a fresh interpreter; ``bench_instrumentation.py`` runs them side by
side and interleaves repeats so machine noise hits all of them alike.

The SDK talks to an in-process ``httpx2.MockTransport`` that returns a recorded-shape chat
completion with a tool call, so the figure is the SDK + instrumentation cost, not network.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

RESPONSE = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1730000000,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": '{"order_id": "A-1"}'},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
}
BODY = json.dumps(RESPONSE).encode()
MESSAGES = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Please refund my duplicate charge on order A-1."},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look an order up",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


def _client() -> Any:
    import httpx2
    import openai

    def handler(request: Any) -> Any:
        return httpx2.Response(200, content=BODY, headers={"content-type": "application/json"})

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return openai.OpenAI(api_key="sk-bench", base_url="http://bench.invalid/v1", http_client=http)


def _provider() -> Any:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Discard(SpanExporter):
        """Counts spans and drops them: export cost is the same for every configuration."""

        count = 0

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            Discard.count += len(spans)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Discard()))
    provider.discard = Discard  # type: ignore[attr-defined]
    return provider


def _setup(config: str, provider: Any) -> Any:
    """Instrument per ``config``; return a wrapper for ``floor`` or None."""
    from opentelemetry import trace

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
    trace.set_tracer_provider(provider)
    if config == "tracejudge":
        import tracejudge

        tracejudge.instrument(tracer_provider=provider, capture_content="SPAN_ONLY")
    elif config == "otel-genai":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    elif config == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as LLMetry

        LLMetry().instrument(tracer_provider=provider)
    elif config == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as OI

        OI().instrument(tracer_provider=provider)
    elif config == "floor":
        tracer = provider.get_tracer("bench.floor")

        def call(client: Any) -> Any:
            # One bare SDK span carrying the attributes a GenAI chat span carries.
            with tracer.start_as_current_span("chat gpt-4o-mini", kind=trace.SpanKind.CLIENT) as s:
                s.set_attribute("gen_ai.operation.name", "chat")
                s.set_attribute("gen_ai.provider.name", "openai")
                s.set_attribute("gen_ai.request.model", "gpt-4o-mini")
                s.set_attribute("server.address", "bench.invalid")
                s.set_attribute("server.port", 443)
                r = client.chat.completions.create(
                    model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS
                )
                s.set_attribute("gen_ai.response.id", r.id)
                s.set_attribute("gen_ai.response.model", r.model)
                s.set_attribute("gen_ai.response.finish_reasons", ["tool_calls"])
                s.set_attribute("gen_ai.usage.input_tokens", r.usage.prompt_tokens)
                s.set_attribute("gen_ai.usage.output_tokens", r.usage.completion_tokens)
                return r

        return call
    elif config != "bare":
        raise SystemExit(f"unknown config {config}")
    return None


def main() -> None:
    config, calls = sys.argv[1], int(sys.argv[2])
    provider = _provider()
    wrapper = _setup(config, provider)
    client = _client()

    def one() -> Any:
        if wrapper is not None:
            return wrapper(client)
        return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS)

    for _ in range(200):
        one()
    before = provider.discard.count
    start = time.perf_counter()
    for _ in range(calls):
        one()
    elapsed = time.perf_counter() - start
    spans = (provider.discard.count - before) / calls
    print(json.dumps({"config": config, "us_per_call": elapsed / calls * 1e6, "spans": spans}))


if __name__ == "__main__":
    main()
