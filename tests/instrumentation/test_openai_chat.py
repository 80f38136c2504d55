"""Chat Completions spans from the real ``openai`` SDK against recorded API responses.

The SDK talks HTTP to ``tests.support.replay.ReplayServer`` (cassettes recorded by
open-telemetry/opentelemetry-python-contrib, Apache-2.0); spans go through the real OTel
SDK to an in-memory exporter and are compared whole.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.otel import PORT_MASK, TTFC_MASK, snap
from tests.support.replay import ReplayServer

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]
SAY_TEST: list[Any] = [{"role": "user", "content": "Say this is a test"}]
WEATHER_MESSAGES: list[Any] = [
    {"role": "system", "content": "You're a helpful assistant."},
    {"role": "user", "content": "What's the weather in Seattle and San Francisco today?"},
]
WEATHER_TOOLS: list[Any] = [
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


# The SDK's .stream() helpers auto-parse tool arguments and (in 1.x) insist on strict tools.
STRICT_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            **WEATHER_TOOLS[0]["function"],
            "strict": True,
            "parameters": {
                **WEATHER_TOOLS[0]["function"]["parameters"],
                "additionalProperties": False,
            },
        },
    }
]


def client(server: ReplayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)


def aclient(server: ReplayServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)


def _base(model: str, **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": model,
        "openai.api.type": "chat_completions",
        "server.address": "127.0.0.1",
        "server.port": PORT_MASK,
    }
    attrs.update(extra)
    return attrs


def test_plain_chat_span_matches_conventions(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A plain chat call yields exactly one CLIENT span named ``chat {model}`` with the
    request, response, usage and content attributes the conventions define."""
    server = replay("openai/test_chat_completion_with_content.yaml")
    result = client(server).chat.completions.create(
        model="gpt-4o-mini", messages=SAY_TEST, temperature=0.5, max_tokens=50, seed=42
    )
    assert result.choices[0].message.content == "This is a test."
    [span] = span_exporter.get_finished_spans()
    assert snap(span) == {
        "name": "chat gpt-4o-mini",
        "kind": "CLIENT",
        "status": "UNSET",
        "attributes": _base(
            "gpt-4o-mini",
            **{
                "gen_ai.request.temperature": 0.5,
                "gen_ai.request.max_tokens": 50,
                "gen_ai.request.seed": 42,
                "gen_ai.input.messages": [
                    {"role": "user", "parts": [{"type": "text", "content": "Say this is a test"}]}
                ],
                "gen_ai.response.id": "chatcmpl-ASYMQRl3A3DXL9FWCK9tnGRcKIO7q",
                "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                "gen_ai.response.finish_reasons": ["stop"],
                "gen_ai.usage.input_tokens": 12,
                "gen_ai.usage.output_tokens": 5,
                # the API reported 0 cached and 0 reasoning tokens: recorded, not dropped
                "gen_ai.usage.cache_read.input_tokens": 0,
                "gen_ai.usage.reasoning.output_tokens": 0,
                "openai.response.system_fingerprint": "fp_0ba0d124f1",
                "gen_ai.output.messages": [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": "This is a test."}],
                        "finish_reason": "stop",
                    }
                ],
            },
        ),
    }


def test_tool_calls_become_tool_call_parts(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """The model's requested tool calls appear as ``tool_call`` parts (ids, names, parsed
    arguments) and tool results sent back appear as ``tool_call_response`` parts: the
    evidence the judge joins with ``execute_tool`` spans."""
    server = replay("openai/test_chat_completion_tool_calls_with_content.yaml", sequential=True)
    c = client(server)
    first = c.chat.completions.create(
        model="gpt-4o-mini", messages=WEATHER_MESSAGES, tools=WEATHER_TOOLS
    )
    calls = first.choices[0].message.tool_calls or []
    follow_up = [
        *WEATHER_MESSAGES,
        first.choices[0].message,
        {"role": "tool", "content": "50 degrees and raining", "tool_call_id": calls[0].id},
        {"role": "tool", "content": "70 degrees and sunny", "tool_call_id": calls[1].id},
    ]
    c.chat.completions.create(model="gpt-4o-mini", messages=follow_up)
    one, two = (snap(s)["attributes"] for s in span_exporter.get_finished_spans())
    assert one["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert one["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "finish_reason": "tool_call",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_JpNb8OiAkbIbHzDggfpdDHpi",
                    "name": "get_current_weather",
                    "arguments": {"location": "Seattle, WA"},
                },
                {
                    "type": "tool_call",
                    "id": "call_vaFQc3zK6hHTRZKXRI5Eo2cJ",
                    "name": "get_current_weather",
                    "arguments": {"location": "San Francisco, CA"},
                },
            ],
        }
    ]
    assert one["gen_ai.tool.definitions"] == [
        {
            "type": "function",
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": WEATHER_TOOLS[0]["function"]["parameters"],
        }
    ]
    sent = two["gen_ai.input.messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert sent[2]["parts"][0]["type"] == "tool_call"
    assert sent[3]["parts"] == [
        {
            "type": "tool_call_response",
            "id": "call_JpNb8OiAkbIbHzDggfpdDHpi",
            "response": "50 degrees and raining",
        }
    ]
    assert two["gen_ai.response.finish_reasons"] == ["stop"]


def test_multiple_choices_one_output_message_each(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``n=2`` is recorded as ``gen_ai.request.choice.count`` and yields one output
    message and one finish reason per choice."""
    server = replay("openai/test_chat_completion_multiple_choices.yaml")
    client(server).chat.completions.create(model="gpt-4o-mini", messages=SAY_TEST, n=2)
    [span] = span_exporter.get_finished_spans()
    attrs = snap(span)["attributes"]
    assert attrs["gen_ai.request.choice.count"] == 2
    assert attrs["gen_ai.response.finish_reasons"] == ["stop", "stop"]
    assert len(attrs["gen_ai.output.messages"]) == 2


def test_streaming_records_text_usage_and_ttfc(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A fully consumed stream ends its span once, with the re-assembled text, the usage
    carried by the last chunk and the time to first chunk."""
    server = replay("openai/test_chat_completion_streaming.yaml")
    stream = client(server).chat.completions.create(
        model="gpt-4",
        messages=SAY_TEST,
        stream=True,
        stream_options={"include_usage": True},
    )
    text = "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices)
    [span] = span_exporter.get_finished_spans()
    assert snap(span) == {
        "name": "chat gpt-4",
        "kind": "CLIENT",
        "status": "UNSET",
        "attributes": _base(
            "gpt-4",
            **{
                "gen_ai.request.stream": True,
                "gen_ai.input.messages": [
                    {"role": "user", "parts": [{"type": "text", "content": "Say this is a test"}]}
                ],
                "gen_ai.response.time_to_first_chunk": TTFC_MASK,
                "gen_ai.response.id": "chatcmpl-ASYMZ4oSykiIFK4lXLReDiKyAjsQl",
                "gen_ai.response.model": "gpt-4-0613",
                "gen_ai.response.finish_reasons": ["stop"],
                "gen_ai.usage.input_tokens": 12,
                "gen_ai.usage.output_tokens": 5,
                # the API reported 0 cached and 0 reasoning tokens: recorded, not dropped
                "gen_ai.usage.cache_read.input_tokens": 0,
                "gen_ai.usage.reasoning.output_tokens": 0,
                "gen_ai.output.messages": [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": text}],
                        "finish_reason": "stop",
                    }
                ],
            },
        ),
    }


def test_streaming_parallel_tool_calls_reassembled(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """Tool-call fragments spread over many chunks are re-assembled per index, so both
    parallel calls keep their ids and complete JSON arguments."""
    server = replay("openai/test_chat_completion_multiple_tools_streaming_with_content.yaml")
    stream = client(server).chat.completions.create(
        model="gpt-4o-mini", messages=WEATHER_MESSAGES, tools=WEATHER_TOOLS, stream=True
    )
    for _ in stream:
        pass
    [span] = span_exporter.get_finished_spans()
    attrs = snap(span)["attributes"]
    assert attrs["gen_ai.output.messages"][0]["parts"] == [
        {
            "type": "tool_call",
            "id": "call_fHCjJqt9Pysde6vcJcvbXGBx",
            "name": "get_current_weather",
            "arguments": {"location": "Seattle, WA"},
        },
        {
            "type": "tool_call",
            "id": "call_3J9foSw3CUb48lrqIXoTky6U",
            "name": "get_current_weather",
            "arguments": {"location": "San Francisco, CA"},
        },
    ]
    assert attrs["gen_ai.usage.output_tokens"] == 51


def test_stream_abandoned_early_still_ends_span(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A caller that breaks out of a stream and drops it must not leak the span: it ends
    (on garbage collection) with what arrived, and without a made-up error."""
    server = replay("openai/test_chat_completion_streaming.yaml")
    stream = client(server).chat.completions.create(model="gpt-4", messages=SAY_TEST, stream=True)
    for i, _ in enumerate(stream):
        if i == 1:
            break
    assert span_exporter.get_finished_spans() == ()
    del stream
    gc.collect()
    [span] = span_exporter.get_finished_spans()
    data = snap(span)
    assert data["status"] == "UNSET"
    assert "gen_ai.response.finish_reasons" not in data["attributes"]
    assert data["attributes"]["gen_ai.response.id"] == "chatcmpl-ASYMZ4oSykiIFK4lXLReDiKyAjsQl"
    assert data["attributes"]["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": '"This'}
    ]


def test_stream_closed_explicitly_ends_span_once(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``close()`` (and the ``with`` form) end the span immediately, exactly once."""
    server = replay("openai/test_chat_completion_streaming.yaml")
    with client(server).chat.completions.create(
        model="gpt-4", messages=SAY_TEST, stream=True
    ) as stream:
        next(iter(stream))
    assert len(span_exporter.get_finished_spans()) == 1
    stream.close()
    gc.collect()
    assert len(span_exporter.get_finished_spans()) == 1


def test_stream_helper_is_traced(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """The SDK's ``chat.completions.stream()`` helper runs on top of the wrapped stream:
    its events still work and the span carries the accumulated tool calls."""
    server = replay("openai/test_chat_completion_multiple_tools_streaming_with_content.yaml")
    with client(server).chat.completions.stream(
        model="gpt-4o-mini", messages=WEATHER_MESSAGES, tools=STRICT_TOOLS
    ) as stream:
        final = stream.get_final_completion()
    assert len(final.choices[0].message.tool_calls or []) == 2
    [span] = span_exporter.get_finished_spans()
    attrs = snap(span)["attributes"]
    assert attrs["gen_ai.request.stream"] is True
    assert [p["id"] for p in attrs["gen_ai.output.messages"][0]["parts"]] == [
        "call_fHCjJqt9Pysde6vcJcvbXGBx",
        "call_3J9foSw3CUb48lrqIXoTky6U",
    ]


def test_404_sets_error_status_and_type(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """An API error re-raises the SDK's exception unchanged and marks the span ERROR with
    ``error.type`` = the HTTP status code and an exception event."""
    server = replay("openai/test_chat_completion_404.yaml")
    with pytest.raises(openai.NotFoundError):
        client(server).chat.completions.create(model="this-model-does-not-exist", messages=SAY_TEST)
    [span] = span_exporter.get_finished_spans()
    data = snap(span)
    assert data["status"] == "ERROR"
    assert data["attributes"]["error.type"] == "404"
    assert "does not exist" in (span.status.description or "")
    (event,) = span.events
    assert event.name == "exception"
    # the core exception event, without the deprecated exception.escaped the SDK's
    # record_exception() adds (flagged by a Weaver live check)
    attributes = dict(event.attributes or {})
    assert sorted(attributes) == ["exception.message", "exception.stacktrace", "exception.type"]
    assert attributes["exception.type"] == "openai.NotFoundError"
    assert "does not exist" in str(attributes["exception.message"])
    assert "Traceback (most recent call last)" in str(attributes["exception.stacktrace"])


def test_async_chat_and_async_stream(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """Async clients are traced like sync ones, including async streams."""
    calls = replay("openai/test_async_chat_completion_tool_calls_with_content.yaml")
    streaming = replay("openai/test_async_chat_completion_streaming.yaml")

    async def main() -> None:
        r = await aclient(calls).chat.completions.create(
            model="gpt-4o-mini", messages=WEATHER_MESSAGES, tools=WEATHER_TOOLS
        )
        assert r.choices[0].message.tool_calls
        s = await aclient(streaming).chat.completions.create(
            model="gpt-4", messages=SAY_TEST, stream=True, stream_options={"include_usage": True}
        )
        async for _ in s:
            pass

    asyncio.run(main())
    first, second = span_exporter.get_finished_spans()
    assert snap(first)["attributes"]["gen_ai.response.finish_reasons"] == ["tool_calls"]
    second_attrs = snap(second)["attributes"]
    assert second_attrs["gen_ai.request.stream"] is True
    assert second_attrs["gen_ai.usage.output_tokens"] == 5


def test_with_raw_response_is_traced(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """``with_raw_response`` returns the raw response as usual, and the span still gets
    the parsed response attributes (parse() is cached, so the caller's parse is free)."""
    server = replay("openai/test_chat_completion_with_content.yaml")
    raw = client(server).chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=SAY_TEST
    )
    assert raw.http_response.status_code == 200
    assert raw.parse().choices[0].message.content == "This is a test."
    [span] = span_exporter.get_finished_spans()
    attrs = snap(span)["attributes"]
    assert attrs["gen_ai.response.id"] == "chatcmpl-ASYMQRl3A3DXL9FWCK9tnGRcKIO7q"
    assert attrs["gen_ai.usage.output_tokens"] == 5


def test_with_raw_response_stream_is_traced(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``with_raw_response`` with ``stream=True``: ``parse()`` yields a traced stream, and
    the span ends with the streamed text once the caller has read it."""
    server = replay("openai/test_chat_completion_streaming.yaml")
    raw = client(server).chat.completions.with_raw_response.create(
        model="gpt-4", messages=SAY_TEST, stream=True, stream_options={"include_usage": True}
    )
    assert span_exporter.get_finished_spans() == ()
    text = "".join(ch.choices[0].delta.content or "" for ch in raw.parse() if ch.choices)
    [span] = span_exporter.get_finished_spans()
    attrs = snap(span)["attributes"]
    assert attrs["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": text}]
    assert attrs["gen_ai.usage.output_tokens"] == 5


def test_async_stream_helper_is_traced(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """The async ``chat.completions.stream()`` helper works on the wrapped async stream."""
    server = replay("openai/test_async_chat_completion_multiple_tools_streaming_with_content.yaml")

    async def main() -> int:
        async with aclient(server).chat.completions.stream(
            model="gpt-4o-mini", messages=WEATHER_MESSAGES, tools=STRICT_TOOLS
        ) as stream:
            final = await stream.get_final_completion()
        return len(final.choices[0].message.tool_calls or [])

    assert asyncio.run(main()) == 2
    [span] = span_exporter.get_finished_spans()
    parts = snap(span)["attributes"]["gen_ai.output.messages"][0]["parts"]
    assert [p["type"] for p in parts] == ["tool_call", "tool_call"]


def test_stream_helper_exited_early_ends_span_at_exit(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """Leaving a ``.stream()`` helper's ``with`` block before the end ends the span right
    there (the helper closes the raw response), not whenever the stream is collected."""
    server = replay("openai/test_chat_completion_streaming.yaml")
    with client(server).chat.completions.stream(model="gpt-4", messages=SAY_TEST) as stream:
        for _ in stream:
            break
        assert span_exporter.get_finished_spans() == ()
    [span] = span_exporter.get_finished_spans()
    assert snap(span)["status"] == "UNSET"


def test_stream_response_attribute_is_the_real_response(replay: Replay) -> None:
    """``stream.response`` still behaves as the HTTP response (headers, status)."""
    server = replay("openai/test_chat_completion_streaming.yaml")
    stream = client(server).chat.completions.create(model="gpt-4", messages=SAY_TEST, stream=True)
    assert stream.response.status_code == 200
    assert stream.response.headers["content-type"].startswith("text/event-stream")
    stream.close()


def test_async_stream_helper_exited_early_ends_span_at_exit(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """The async helper's ``async with`` exit ends the span too."""
    server = replay("openai/test_async_chat_completion_streaming.yaml")

    async def main() -> int:
        async with aclient(server).chat.completions.stream(
            model="gpt-4", messages=SAY_TEST
        ) as stream:
            async for _ in stream:
                break
        return len(span_exporter.get_finished_spans())

    assert asyncio.run(main()) == 1


def test_structured_output_parse_is_traced(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``chat.completions.parse`` posts without going through ``create``; it is patched
    too, so structured-output calls are not invisible."""
    server = replay("openai/test_chat_completion_with_content.yaml")
    parsed = client(server).chat.completions.parse(model="gpt-4o-mini", messages=SAY_TEST)
    assert parsed.choices[0].message.content == "This is a test."
    [span] = span_exporter.get_finished_spans()
    attrs = snap(span)["attributes"]
    assert span.name == "chat gpt-4o-mini"
    assert attrs["gen_ai.response.id"] == "chatcmpl-ASYMQRl3A3DXL9FWCK9tnGRcKIO7q"
    assert attrs["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": "This is a test."}
    ]
