"""The Anthropic patcher against the real ``anthropic`` SDK and recorded API responses.

Every test drives the installed SDK (2.x in .venv, 0.40 in .venv-sdk-oldest via
scripts/sdk-matrix.sh) over loopback HTTP to ``tests.support.replay.ReplayServer``,
which replays cassettes recorded by traceloop/openllmetry (Apache-2.0, see
tests/fixtures/MANIFEST.tsv). Spans go to the real OTel SDK with an
in-memory exporter and are compared whole, as snapshots.
"""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.support.replay import ReplayServer
from tracejudge.instrumentation import instrument, uninstrument
from tracejudge.instrumentation._context import claim_tool_call_id
from tracejudge.instrumentation.anthropic._convert import finish_reason, response_attributes

CASSETTES = "anthropic/"
JOKE = [{"role": "user", "content": "Tell me a joke about OpenTelemetry"}]
_CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
)
WEATHER_TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "Get the current weather in a given location",
        "input_schema": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    },
    {
        "name": "get_time",
        "description": "Get the current time in a given time zone",
        "input_schema": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
        },
    },
]
NY = [
    {
        "role": "user",
        "content": (
            "What is the weather like right now in New York? Also what time is it there now?"
        ),
    }
]


@dataclass
class Otel:
    """In-memory OTel pipeline the instrumentation is pointed at."""

    tracer_provider: TracerProvider
    exporter: InMemorySpanExporter
    meter_provider: MeterProvider
    reader: InMemoryMetricReader

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def only_span(self) -> ReadableSpan:
        spans = self.spans()
        assert len(spans) == 1, [s.name for s in spans]
        return spans[0]


@pytest.fixture
def otel(otel_traces: tuple[TracerProvider, InMemorySpanExporter]) -> Iterator[Otel]:
    """The shared test provider (its spans are checked against the conventions)."""
    tracer_provider, exporter = otel_traces
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    instrument(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content="SPAN_ONLY",
        raise_internal_errors=True,
    )
    yield Otel(tracer_provider, exporter, meter_provider, reader)
    uninstrument()


def serve(name: str) -> ReplayServer:
    return ReplayServer([CASSETTES + name])


# Clients are typed Any on purpose: the same tests run against SDK 0.40 and 2.x, whose
# parameter and event types differ; the assertions, not the stubs, check the shapes.
def sync_client(server: ReplayServer) -> Any:
    return anthropic.Anthropic(api_key="test-key", base_url=server.origin, max_retries=0)


def async_client(server: ReplayServer) -> Any:
    return anthropic.AsyncAnthropic(api_key="test-key", base_url=server.origin, max_retries=0)


def snapshot(span: ReadableSpan) -> dict[str, Any]:
    """The span's attributes with JSON content decoded and run-dependent values masked."""
    attrs: dict[str, Any] = dict(span.attributes or {})
    for key in _CONTENT_KEYS:
        if key in attrs:
            attrs[key] = json.loads(attrs[key])
    for key, value in list(attrs.items()):
        if isinstance(value, tuple):
            attrs[key] = list(value)
    if "server.port" in attrs:
        attrs["server.port"] = "<port>"
    if "gen_ai.response.time_to_first_chunk" in attrs:
        ttfc = attrs["gen_ai.response.time_to_first_chunk"]
        assert isinstance(ttfc, float)
        assert 0 < ttfc < 30
        attrs["gen_ai.response.time_to_first_chunk"] = "<ttfc>"
    return attrs


def base(model: str, *, stream: bool = False, max_tokens: int = 1024) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": max_tokens,
        "server.address": "127.0.0.1",
        "server.port": "<port>",
    }
    if stream:
        attrs["gen_ai.request.stream"] = True
        attrs["gen_ai.response.time_to_first_chunk"] = "<ttfc>"
    return attrs


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def assistant(parts: list[dict[str, Any]], finish: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "parts": parts, "finish_reason": finish}]


def text_of(message: Any) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


def test_create_records_one_conformant_client_span(otel: Otel) -> None:
    """A plain messages.create is the basic model call every run is built from: one
    CLIENT span named ``chat {model}`` with request, response, usage and content."""
    with serve("test_anthropic_message_create_with_events_with_content.yaml") as server:
        reply = sync_client(server).messages.create(
            model="claude-3-opus-20240229", max_tokens=1024, messages=JOKE
        )
    span = otel.only_span()
    assert span.name == "chat claude-3-opus-20240229"
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    assert snapshot(span) == {
        **base("claude-3-opus-20240229"),
        "gen_ai.input.messages": [user("Tell me a joke about OpenTelemetry")],
        "gen_ai.response.id": "msg_01TPXhkPo8jy6yQMrMhjpiAE",
        "gen_ai.response.model": "claude-3-opus-20240229",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 17,
        "gen_ai.usage.output_tokens": 220,
        "gen_ai.output.messages": assistant([{"type": "text", "content": text_of(reply)}], "stop"),
    }


def test_request_parameters_and_system_instructions(otel: Otel) -> None:
    """Sampling parameters, stop sequences and the system prompt are part of what a
    judge compares between variants; temperature/top_p/top_k travel in extra_body on
    SDK 2.x (no longer keywords) and must still be recorded."""
    with serve("test_anthropic_message_create_with_events_with_content.yaml") as server:
        sync_client(server).messages.create(
            model="claude-3-opus-20240229",
            max_tokens=1024,
            messages=JOKE,
            system="You are terse.",
            stop_sequences=["END"],
            extra_body={
                "temperature": 0.2,
                "top_p": 0.9,
                "top_k": 40,
                "output_config": {
                    "effort": "high",
                    "format": {"type": "json_schema", "schema": {"type": "object"}},
                },
            },
        )
    attrs = snapshot(otel.only_span())
    assert attrs["gen_ai.request.reasoning.level"] == "high"
    assert attrs["gen_ai.output.type"] == "json"
    assert attrs["gen_ai.request.temperature"] == 0.2
    assert attrs["gen_ai.request.top_p"] == 0.9
    assert attrs["gen_ai.request.top_k"] == 40
    assert attrs["gen_ai.request.stop_sequences"] == ["END"]
    assert attrs["gen_ai.system_instructions"] == [{"type": "text", "content": "You are terse."}]


def test_tool_use_blocks_become_tool_call_parts(otel: Otel) -> None:
    """The judge checks what the model asked tools to do: tool_use blocks must be
    ``tool_call`` parts with parsed arguments, the finish reason ``tool_call``, and the
    ids handed to the ledger so ``@tool`` spans can join them."""
    with serve("test_anthropic_tools_with_events_with_content.yaml") as server:
        reply = sync_client(server).messages.create(
            model="claude-3-5-sonnet-20240620",
            max_tokens=1024,
            messages=NY,
            tools=WEATHER_TOOLS,
        )
    assert snapshot(otel.only_span()) == {
        **base("claude-3-5-sonnet-20240620"),
        "gen_ai.input.messages": [user(NY[0]["content"])],
        "gen_ai.tool.definitions": [
            {
                "type": "function",
                "name": t["name"],
                "description": t["description"],
                "parameters": t["input_schema"],
            }
            for t in WEATHER_TOOLS
        ],
        "gen_ai.response.id": "msg_01RBkXFe9TmDNNWThMz2HmGt",
        "gen_ai.response.model": "claude-3-5-sonnet-20240620",
        "gen_ai.response.finish_reasons": ["tool_call"],
        "gen_ai.usage.input_tokens": 514,
        "gen_ai.usage.output_tokens": 152,
        "gen_ai.output.messages": assistant(
            [
                {"type": "text", "content": text_of(reply)},
                {
                    "type": "tool_call",
                    "id": "toolu_012r6TBCWjRHG71j6zruYyUL",
                    "name": "get_weather",
                    "arguments": {"location": "New York, NY", "unit": "fahrenheit"},
                },
                {
                    "type": "tool_call",
                    "id": "toolu_01SkeBKkLCNYWNuivqFerGDd",
                    "name": "get_time",
                    "arguments": {"timezone": "America/New_York"},
                },
            ],
            "tool_call",
        ),
    }
    assert claim_tool_call_id(("get_time",), None) == "toolu_01SkeBKkLCNYWNuivqFerGDd"


def test_tool_history_records_tool_results_as_tool_call_responses(otel: Otel) -> None:
    """Tool results the agent fed back are evidence of what the tools returned; they
    ride on user turns in Anthropic's API and must come out as ``tool`` messages with
    ``tool_call_response`` parts joined to the earlier ``tool_call`` id."""
    history: list[Any] = [
        {"role": "user", "content": "What is the weather and current time in San Francisco?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll help you get the weather."},
                {
                    "id": "call_1",
                    "type": "tool_use",
                    "name": "get_weather",
                    "input": {"location": "San Francisco, CA"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "content": "Sunny and 65 degrees Fahrenheit",
                    "tool_use_id": "call_1",
                }
            ],
        },
    ]
    with serve("test_anthropic_tools_history_with_events_with_content.yaml") as server:
        sync_client(server).messages.create(
            model="claude-3-5-haiku-20241022",
            max_tokens=1024,
            messages=history,
            tools=WEATHER_TOOLS,
        )
    attrs = snapshot(otel.only_span())
    assert attrs["gen_ai.input.messages"] == [
        user("What is the weather and current time in San Francisco?"),
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "I'll help you get the weather."},
                {
                    "type": "tool_call",
                    "id": "call_1",
                    "name": "get_weather",
                    "arguments": {"location": "San Francisco, CA"},
                },
            ],
        },
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": "call_1",
                    "response": "Sunny and 65 degrees Fahrenheit",
                }
            ],
        },
    ]
    assert attrs["gen_ai.usage.input_tokens"] == 568
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 0
    assert attrs["gen_ai.usage.cache_creation.input_tokens"] == 0
    assert attrs["gen_ai.output.messages"] == assistant(
        [
            {
                "type": "tool_call",
                "id": "toolu_013CVavAKjSN7RZoE2ZN4xQJ",
                "name": "get_time",
                "arguments": {"timezone": "America/Los_Angeles"},
            }
        ],
        "tool_call",
    )


def test_create_stream_true_records_the_whole_stream(otel: Otel) -> None:
    """``stream=True`` returns before anything is generated; the span must stay open
    until the stream is read and then carry the rebuilt output, usage and the time to
    the first chunk, while the application still gets a real ``Stream``."""
    with serve("test_anthropic_message_streaming_with_events_with_content.yaml") as server:
        stream = sync_client(server).messages.create(
            model="claude-3-haiku-20240307", max_tokens=1024, messages=JOKE, stream=True
        )
        assert isinstance(stream, anthropic.Stream)  # the app's type checks still hold
        assert otel.spans() == []
        text = "".join(
            e.delta.text
            for e in stream
            if e.type == "content_block_delta" and e.delta.type == "text_delta"
        )
    assert snapshot(otel.only_span()) == {
        **base("claude-3-haiku-20240307", stream=True),
        "gen_ai.input.messages": [user("Tell me a joke about OpenTelemetry")],
        "gen_ai.response.id": "msg_01MXWxhWoPSgrYhjTuMDM6F1",
        "gen_ai.response.model": "claude-3-haiku-20240307",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 17,
        "gen_ai.usage.output_tokens": otel.only_span().attributes["gen_ai.usage.output_tokens"],  # type: ignore[index]
        "gen_ai.output.messages": assistant([{"type": "text", "content": text}], "stop"),
    }
    assert text.startswith("Here's an OpenTelemetry")


def test_messages_stream_helper_with_text_stream_and_final_message(otel: Otel) -> None:
    """The ``messages.stream()`` helper is how most agents stream; reading only
    ``text_stream`` and then ``get_final_message()`` must yield one complete span with
    the streamed tool calls' arguments parsed from their JSON deltas."""
    with (
        serve("test_anthropic_tools_streaming_with_events_with_content.yaml") as server,
        sync_client(server).messages.stream(
            model="claude-3-5-sonnet-20240620", max_tokens=1024, messages=NY, tools=WEATHER_TOOLS
        ) as stream,
    ):
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    attrs = snapshot(otel.only_span())
    calls = [b for b in final.content if b.type == "tool_use"]
    assert attrs["gen_ai.output.messages"] == assistant(
        [{"type": "text", "content": text}]
        + [{"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.input} for c in calls],
        "tool_call",
    )
    assert [c.input for c in calls] == [
        {"location": "New York, NY", "unit": "fahrenheit"},
        {"timezone": "America/New_York"},
    ]
    assert attrs["gen_ai.response.id"] == final.id
    assert attrs["gen_ai.usage.output_tokens"] == final.usage.output_tokens
    assert attrs["gen_ai.usage.input_tokens"] == 514
    assert attrs["gen_ai.request.stream"] is True


def test_thinking_stream_records_reasoning_parts(otel: Otel) -> None:
    """Extended thinking arrives as thinking deltas before the answer; it must be kept
    as a ``reasoning`` part, separate from the text the user saw."""
    with (
        serve("test_anthropic_thinking_streaming_with_events_with_content.yaml") as server,
        sync_client(server).messages.stream(
            model="claude-3-7-sonnet-20250219",
            max_tokens=2048,
            messages=[{"role": "user", "content": "How many r in strawberry?"}],
            extra_body={"thinking": {"type": "enabled", "budget_tokens": 1024}},
        ) as stream,
    ):
        events = list(stream)
    thinking = "".join(
        e.delta.thinking
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "thinking_delta"
    )
    text = "".join(
        e.delta.text
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "text_delta"
    )
    attrs = snapshot(otel.only_span())
    assert thinking
    assert text
    assert attrs["gen_ai.output.messages"] == assistant(
        [{"type": "reasoning", "content": thinking}, {"type": "text", "content": text}], "stop"
    )
    assert attrs["gen_ai.response.id"] == "msg_01SZKz6DEhWnfZcxPQDQz49Y"


def test_stream_abandoned_early_still_ends_its_span(otel: Otel) -> None:
    """Breaking out of a stream is the most common span leak in GenAI instrumentation;
    the span must end when the stream is dropped, keep what arrived, and not claim a
    finish reason or an error that never happened."""
    with serve("test_anthropic_message_streaming_with_events_with_content.yaml") as server:
        stream = sync_client(server).messages.create(
            model="claude-3-haiku-20240307", max_tokens=1024, messages=JOKE, stream=True
        )
        seen = []
        for event in stream:
            seen.append(event)
            if len(seen) == 4:  # message_start, block start, two text deltas
                break
        del stream, event
        gc.collect()
    span = otel.only_span()
    attrs = snapshot(span)
    assert span.status.status_code is StatusCode.UNSET
    assert "gen_ai.response.finish_reasons" not in attrs
    assert "error.type" not in attrs
    assert attrs["gen_ai.response.id"] == "msg_01MXWxhWoPSgrYhjTuMDM6F1"
    partial = "".join(e.delta.text for e in seen if e.type == "content_block_delta")
    assert partial == "Here's an OpenTelemet"
    assert attrs["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": partial}]}
    ]


def test_stream_context_exit_before_reading_ends_span(otel: Otel) -> None:
    """Leaving ``with messages.stream(...)`` without reading must close the span at
    exit (not at garbage collection), so the collector sees the run finish."""
    with serve("test_anthropic_message_streaming_with_events_with_content.yaml") as server:
        keep = []
        with sync_client(server).messages.stream(
            model="claude-3-haiku-20240307", max_tokens=1024, messages=JOKE
        ) as stream:
            keep.append(stream)
        span = otel.only_span()
    assert span.end_time is not None
    assert span.status.status_code is StatusCode.UNSET


def test_async_create_and_async_stream(otel: Otel) -> None:
    """Async agents are common; AsyncAnthropic's create and stream helper must produce
    the same spans as the sync client."""

    async def run(server_a: ReplayServer, server_b: ReplayServer) -> str:
        reply = await async_client(server_a).messages.create(
            model="claude-3-opus-20240229", max_tokens=1024, messages=JOKE
        )
        async with async_client(server_b).messages.stream(
            model="claude-3-haiku-20240307", max_tokens=1024, messages=JOKE
        ) as stream:
            streamed = "".join([t async for t in stream.text_stream])
        return text_of(reply) + "|" + streamed

    with (
        serve("test_async_anthropic_message_create_with_events_with_content.yaml") as a,
        serve("test_async_anthropic_message_streaming_with_events_with_content.yaml") as b,
    ):
        created, streamed = asyncio.run(run(a, b)).split("|")
    first, second = (snapshot(s) for s in otel.spans())
    assert first == {
        **base("claude-3-opus-20240229"),
        "gen_ai.input.messages": [user("Tell me a joke about OpenTelemetry")],
        "gen_ai.response.id": "msg_01UFDDjsFn5BPQnfNwmsMnAY",
        "gen_ai.response.model": "claude-3-opus-20240229",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 17,
        "gen_ai.usage.output_tokens": 189,
        "gen_ai.output.messages": assistant([{"type": "text", "content": created}], "stop"),
    }
    assert second == {
        **base("claude-3-haiku-20240307", stream=True),
        "gen_ai.input.messages": [user("Tell me a joke about OpenTelemetry")],
        "gen_ai.response.id": "msg_016o6A7zDmgjucf5mWv1rrPD",
        "gen_ai.response.model": "claude-3-haiku-20240307",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 17,
        "gen_ai.usage.output_tokens": second["gen_ai.usage.output_tokens"],
        "gen_ai.output.messages": assistant([{"type": "text", "content": streamed}], "stop"),
    }


def test_usage_counts_cached_tokens_as_input() -> None:
    """Anthropic's ``input_tokens`` excludes cache reads and writes; the conventions
    (and every budget rule) count them as input, so the three must be summed while
    the cache counts are also reported on their own."""
    attrs = response_attributes(
        {
            "id": "msg_1",
            "model": "claude-x",
            "stop_reason": "max_tokens",
            "usage": {
                "input_tokens": 10,
                "cache_read_input_tokens": 5,
                "cache_creation_input_tokens": 3,
                "output_tokens": 7,
                "output_tokens_details": {"thinking_tokens": 4},
            },
        }
    )
    assert attrs == {
        "gen_ai.response.id": "msg_1",
        "gen_ai.response.model": "claude-x",
        "gen_ai.response.finish_reasons": ["length"],
        "gen_ai.usage.input_tokens": 18,
        "gen_ai.usage.cache_read.input_tokens": 5,
        "gen_ai.usage.cache_creation.input_tokens": 3,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.usage.reasoning.output_tokens": 4,
    }


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_call"),
        ("refusal", "content_filter"),
        ("pause_turn", "pause_turn"),
        (None, None),
    ],
)
def test_stop_reasons_map_to_convention_finish_reasons(
    stop_reason: str | None, finish: str | None
) -> None:
    """Rules compare finish reasons across providers, so Anthropic's stop reasons
    use the conventions' words where one exists and pass through unchanged otherwise."""
    assert finish_reason(stop_reason) == finish


def test_async_stream_true_closed_early_ends_span(otel: Otel) -> None:
    """An async consumer that stops reading and closes the stream must end the span
    right there (status unset, partial output kept), as the sync one does."""

    async def run(server: ReplayServer) -> list[Any]:
        stream = await async_client(server).messages.create(
            model="claude-3-haiku-20240307", max_tokens=1024, messages=JOKE, stream=True
        )
        assert isinstance(stream, anthropic.AsyncStream)
        seen = []
        async for event in stream:
            seen.append(event)
            if len(seen) == 3:
                break
        await stream.close()
        assert len(otel.spans()) == 1  # ended at close, not at garbage collection
        return seen

    with serve("test_async_anthropic_message_streaming_with_events_with_content.yaml") as server:
        seen = asyncio.run(run(server))
    span = otel.only_span()
    attrs = snapshot(span)
    assert span.status.status_code is StatusCode.UNSET
    assert "gen_ai.response.finish_reasons" not in attrs
    partial = "".join(e.delta.text for e in seen if e.type == "content_block_delta")
    assert attrs["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": partial}]}
    ]
