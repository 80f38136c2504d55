"""End to end on real parts: the real ``openai`` SDK against recorded API responses
(tests.support.replay; cassette by open-telemetry/opentelemetry-python-contrib,
Apache-2.0), ``tracejudge.instrument()``, the real OTLP encoder, then the decoders and the
run builder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.replay import ReplayServer
from tracejudge.model import ToolCall, build_runs, spans_from_json, spans_from_proto_request
from tracejudge.otlp.json_encode import request_to_otlp_json

pytestmark = pytest.mark.usefixtures("instrumented")

WEATHER: list[Any] = [
    {"role": "system", "content": "You're a helpful assistant."},
    {"role": "user", "content": "What's the weather in Seattle and San Francisco today?"},
]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"],
            },
        },
    }
]


def test_uninstrumented_tool_loop_yields_inferred_executions(
    replay: Callable[..., ReplayServer],
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    """A hand-written agent loop runs its tools without any tool span; the builder still
    sees both executions (from the tool results the second request carried), in the right
    place, through both the protobuf and the OTLP/JSON wire forms."""
    server = replay("openai/test_chat_completion_tool_calls_with_content.yaml", sequential=True)
    client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    with tracer_provider.get_tracer("loop").start_as_current_span("handle request"):
        first = client.chat.completions.create(model="gpt-4o-mini", messages=WEATHER, tools=TOOLS)
        calls = first.choices[0].message.tool_calls or []
        results = ["50 degrees and raining", "70 degrees and sunny"]
        follow_up = [
            *WEATHER,
            first.choices[0].message,
            *(
                {"role": "tool", "content": text, "tool_call_id": call.id}
                for call, text in zip(calls, results, strict=True)
            ),
        ]
        second = client.chat.completions.create(model="gpt-4o-mini", messages=follow_up)
    request = encode_spans(span_exporter.get_finished_spans())
    (run,) = build_runs(spans_from_proto_request(request.SerializeToString()))
    assert build_runs(spans_from_json(request_to_otlp_json(request))) == [run]
    assert [s.kind for s in run.steps] == ["model", "tool", "tool", "model"]
    inferred = [s for s in run.steps if isinstance(s, ToolCall)]
    assert all(t.inferred and t.span_id == run.steps[3].span_id for t in inferred)
    assert [t.call_id for t in inferred] == [c.id for c in calls]
    assert [t.arguments for t in inferred] == [
        {"location": "Seattle, WA"},
        {"location": "San Francisco, CA"},
    ]
    assert [t.result for t in inferred] == results
    assert run.final_answer == second.choices[0].message.content
    assert run.final_answer_span_id == run.steps[3].span_id
