"""The Cohere patcher against the real ``cohere`` SDK (v2 Chat API) and recorded responses.

Every test drives the installed SDK over loopback HTTP to
``tests.support.replay.ReplayServer``, which replays cassettes recorded against the Cohere
API by traceloop/openllmetry (Apache-2.0, see tests/fixtures/MANIFEST.tsv). Spans go to
the real OTel SDK and are compared whole, as snapshots; every span is also checked against
the pinned convention registry. The malformed responses (invalid tool-call JSON, an
unknown finish reason, no usage) are recorded ones edited in the test
(``derived_cassette``), each edit named where it is made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cohere
import pytest
from inline_snapshot import snapshot
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.support.providers import (
    assert_an_unread_stream_ends_when_collected,
    assert_left_unpatched_outside_the_range,
    assert_uninstrument_round_trip,
)
from tests.support.replay import ReplayServer, derived_cassette
from tests.support.spans import span_dicts
from tracejudge.instrumentation.cohere import _patch as cohere_patch

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]
PIRATE: Any = [{"role": "user", "content": "Tell me a joke, pirate style"}]
TOKYO = "What is the weather and current time in Tokyo?"


def _function(name: str, what: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Get the current {what} in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {
                        "type": "string",
                        "description": "The city and state, e.g. San Francisco, CA",
                    }
                },
                "required": ["location"],
            },
        },
    }


# The tools of the recorded requests (openllmetry's test_chat.py).
TOOLS: Any = [_function("get_weather", "weather"), _function("get_time", "time")]
QUESTION: Any = [{"role": "user", "content": TOKYO}]
TOOL_STREAM = "cohere/test_cohere_v2_chat_legacy_with_tool_calls_and_streaming.yaml"


def client(server: ReplayServer) -> cohere.ClientV2:
    return cohere.ClientV2(api_key="test-key", base_url=server.origin)


def async_client(server: ReplayServer) -> cohere.AsyncClientV2:
    return cohere.AsyncClientV2(api_key="test-key", base_url=server.origin)


def stream_tools(c: cohere.ClientV2) -> list[Any]:
    return list(c.chat_stream(model="command-r", messages=QUESTION, tools=TOOLS))


def test_tool_calls_then_their_results(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """The recorded two-turn tool use: the first span has the model's plan (a ``reasoning``
    part) and both ``tool_call`` parts with their ids; the second has the history — the
    assistant turn with its calls, each result a ``tool`` turn — and the answer. Token
    counts are the billed ones (the conventions' choice when both are reported)."""
    server = replay(
        "cohere/test_cohere_v2_chat_legacy_with_tool_calls_and_history.yaml", sequential=True
    )
    c = client(server)
    first = c.chat(model="command-r", messages=QUESTION, tools=TOOLS)
    calls = first.message.tool_calls
    assert calls is not None
    history: Any = [
        {"role": "user", "content": TOKYO},
        {"role": "assistant", "tool_plan": first.message.tool_plan, "tool_calls": calls},
        {"role": "tool", "tool_call_id": calls[0].id, "content": "4:20 PM"},
        {"role": "tool", "tool_call_id": calls[1].id, "content": "Sunny 20 degrees Celsius"},
    ]
    second = c.chat(model="command-r", messages=history, tools=TOOLS)
    assert second.finish_reason == "COMPLETE"
    assert not server.unmatched
    assert span_dicts(span_exporter, drop=("gen_ai.tool.definitions",)) == snapshot(
        [
            {
                "name": "chat command-r",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "cohere",
                    "gen_ai.request.model": "command-r",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "What is the weather and current time in Tokyo?",
                                }
                            ],
                        }
                    ],
                    "gen_ai.response.id": "965405bb-b9da-4dc5-b329-e708a795e188",
                    "gen_ai.response.finish_reasons": ["tool_call"],
                    "gen_ai.usage.input_tokens": 62,
                    "gen_ai.usage.output_tokens": 28,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "reasoning",
                                    "content": "I will search for the current time and weather in Tokyo.",
                                },
                                {
                                    "type": "tool_call",
                                    "name": "get_time",
                                    "id": "get_time_dp3men9jrvhf",
                                    "arguments": {"location": "Tokyo"},
                                },
                                {
                                    "type": "tool_call",
                                    "name": "get_weather",
                                    "id": "get_weather_d7arjgsc96yf",
                                    "arguments": {"location": "Tokyo"},
                                },
                            ],
                            "finish_reason": "tool_call",
                        }
                    ],
                },
            },
            {
                "name": "chat command-r",
                "kind": "CLIENT",
                "context": {"trace_id": 2, "span_id": 2},
                "parent": None,
                "start_time": 3000000000,
                "end_time": 4000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "cohere",
                    "gen_ai.request.model": "command-r",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "What is the weather and current time in Tokyo?",
                                }
                            ],
                        },
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "reasoning",
                                    "content": "I will search for the current time and weather in Tokyo.",
                                },
                                {
                                    "type": "tool_call",
                                    "name": "get_time",
                                    "id": "get_time_dp3men9jrvhf",
                                    "arguments": {"location": "Tokyo"},
                                },
                                {
                                    "type": "tool_call",
                                    "name": "get_weather",
                                    "id": "get_weather_d7arjgsc96yf",
                                    "arguments": {"location": "Tokyo"},
                                },
                            ],
                        },
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "response": "4:20 PM",
                                    "id": "get_time_dp3men9jrvhf",
                                }
                            ],
                        },
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "response": "Sunny 20 degrees Celsius",
                                    "id": "get_weather_d7arjgsc96yf",
                                }
                            ],
                        },
                    ],
                    "gen_ai.response.id": "00f7ec58-cd22-4b62-b068-0e7ece6bbf67",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 94,
                    "gen_ai.usage.output_tokens": 27,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "The current time in Tokyo is 4:20 PM and the weather is sunny with a temperature of 20°C.",
                                }
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            },
        ]
    )


def test_chat_stream_with_tool_calls(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """A stream's plan deltas are joined into the ``reasoning`` part, each tool call's
    argument deltas into its parsed arguments; the ``message-end`` event gives the finish
    reason and usage."""
    events = stream_tools(client(replay(TOOL_STREAM)))
    assert events[-1].type == "message-end"
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "chat command-r",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.stream": True,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "cohere",
                    "gen_ai.request.model": "command-r",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.response.time_to_first_chunk": "<ttfc>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "What is the weather and current time in Tokyo?",
                                }
                            ],
                        }
                    ],
                    "gen_ai.tool.definitions": [
                        {
                            "type": "function",
                            "name": "get_weather",
                            "description": "Get the current weather in a given location",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "location": {
                                        "type": "string",
                                        "description": "The city and state, e.g. San Francisco, CA",
                                    }
                                },
                                "required": ["location"],
                            },
                        },
                        {
                            "type": "function",
                            "name": "get_time",
                            "description": "Get the current time in a given location",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "location": {
                                        "type": "string",
                                        "description": "The city and state, e.g. San Francisco, CA",
                                    }
                                },
                                "required": ["location"],
                            },
                        },
                    ],
                    "gen_ai.response.id": "e6d757a9-f0f3-40fe-9b8a-44cdc3bd18a7",
                    "gen_ai.response.finish_reasons": ["tool_call"],
                    "gen_ai.usage.input_tokens": 62,
                    "gen_ai.usage.output_tokens": 28,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "reasoning",
                                    "content": "I will search for the current time and weather in Tokyo.",
                                },
                                {
                                    "type": "tool_call",
                                    "name": "get_time",
                                    "id": "get_time_dg5wwc00d8v5",
                                    "arguments": {"location": "Tokyo"},
                                },
                                {
                                    "type": "tool_call",
                                    "name": "get_weather",
                                    "id": "get_weather_bc8241gkqss5",
                                    "arguments": {"location": "Tokyo"},
                                },
                            ],
                            "finish_reason": "tool_call",
                        }
                    ],
                },
            }
        ]
    )


def test_chat_and_chat_stream_of_text(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """A plain ``chat`` and a text stream: the streamed text deltas become one text part."""
    client(replay("cohere/test_cohere_v2_chat_legacy.yaml")).chat(model="command", messages=PIRATE)
    stream = client(replay("cohere/test_cohere_v2_chat_legacy_with_streaming.yaml"))
    events: list[Any] = list(stream.chat_stream(model="command", messages=PIRATE))
    text = "".join(e.delta.message.content.text for e in events if e.type == "content-delta")
    spans = span_dicts(span_exporter)
    assert spans[1]["attributes"]["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": text}
    ]
    assert span_dicts(span_exporter, drop=("gen_ai.output.messages",)) == snapshot(
        [
            {
                "name": "chat command",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "cohere",
                    "gen_ai.request.model": "command",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "Tell me a joke, pirate style"}],
                        }
                    ],
                    "gen_ai.response.id": "83e3e297-264b-478e-9b22-5058386292ed",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 7,
                    "gen_ai.usage.output_tokens": 88,
                },
            },
            {
                "name": "chat command",
                "kind": "CLIENT",
                "context": {"trace_id": 2, "span_id": 2},
                "parent": None,
                "start_time": 3000000000,
                "end_time": 4000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.stream": True,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "cohere",
                    "gen_ai.request.model": "command",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.response.time_to_first_chunk": "<ttfc>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "Tell me a joke, pirate style"}],
                        }
                    ],
                    "gen_ai.response.id": "6cd6ce61-bb3b-46f6-907e-fcfab45e51b6",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 7,
                    "gen_ai.usage.output_tokens": 109,
                },
            },
        ]
    )


def test_async_chat_and_chat_stream(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """``AsyncClientV2``: ``chat`` awaited, ``chat_stream`` an async generator, traced
    like the sync client's (the span of a stream ends when it is read to its end)."""
    chat = async_client(
        replay("cohere/test_cohere_v2_chat_legacy_with_tool_calls_and_history_async.yaml")
    )
    streamed = async_client(
        replay("cohere/test_cohere_v2_chat_legacy_with_tool_calls_and_streaming_async.yaml")
    )

    async def run() -> None:
        reply = await chat.chat(
            model="command-r",
            messages=QUESTION,
            tools=TOOLS,
        )
        assert reply.finish_reason == "TOOL_CALL"
        async for _event in streamed.chat_stream(
            model="command-r",
            messages=QUESTION,
            tools=TOOLS,
        ):
            pass

    asyncio.run(run())
    spans = span_dicts(span_exporter)
    assert [s["attributes"]["gen_ai.output.messages"] for s in spans] == snapshot(
        [
            [
                {
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "reasoning",
                            "content": "I will use the get_weather and get_time tools to find the weather and current time in Tokyo.",
                        },
                        {
                            "type": "tool_call",
                            "name": "get_weather",
                            "id": "get_weather_mznfyh090g90",
                            "arguments": {"location": "Tokyo"},
                        },
                        {
                            "type": "tool_call",
                            "name": "get_time",
                            "id": "get_time_eksdqe8f9g4y",
                            "arguments": {"location": "Tokyo"},
                        },
                    ],
                    "finish_reason": "tool_call",
                }
            ],
            [
                {
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "reasoning",
                            "content": "I will search for the current time and weather in Tokyo and relay this information to the user.",
                        },
                        {
                            "type": "tool_call",
                            "name": "get_time",
                            "id": "get_time_mp1131yrhbga",
                            "arguments": {"location": "Tokyo"},
                        },
                        {
                            "type": "tool_call",
                            "name": "get_weather",
                            "id": "get_weather_yxz1xx2m07cn",
                            "arguments": {"location": "Tokyo"},
                        },
                    ],
                    "finish_reason": "tool_call",
                }
            ],
        ]
    )
    assert [s["attributes"].get("gen_ai.request.stream") for s in spans] == [None, True]


def test_the_requested_tool_call_ids_reach_the_tool_spans(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """The judge joins each tool execution to the model turn that asked for it: the
    ``@tool`` spans run after the response carry its call ids and the descriptions the
    request gave the tools."""

    @tracejudge.tool
    def get_time(location: str) -> str:
        return "4:20 PM"

    @tracejudge.tool
    def get_weather(location: str) -> str:
        return "Sunny 20 degrees Celsius"

    server = replay("cohere/test_cohere_v2_chat_legacy_with_tool_calls_and_history.yaml")
    with tracejudge.agent("tokyo-agent"):
        reply = client(server).chat(
            model="command-r",
            messages=QUESTION,
            tools=TOOLS,
        )
        get_time(location="Tokyo")
        get_weather(location="Tokyo")
    assert [c.id for c in reply.message.tool_calls or ()] == [
        "get_time_dp3men9jrvhf",
        "get_weather_d7arjgsc96yf",
    ]
    tools = {s["name"]: s["attributes"] for s in span_dicts(span_exporter)}
    assert tools["execute_tool get_time"]["gen_ai.tool.call.id"] == "get_time_dp3men9jrvhf"
    assert tools["execute_tool get_weather"]["gen_ai.tool.call.id"] == "get_weather_d7arjgsc96yf"
    assert tools["execute_tool get_time"]["gen_ai.tool.description"] == (
        "Get the current time in a given location"
    )


def test_stream_left_early_ends_the_span_with_what_arrived(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A ``break`` out of ``chat_stream`` ends the span at once (no error status), keeping
    what arrived; a stream never read ends when it is collected."""
    c = client(replay("cohere/test_cohere_v2_chat_legacy_with_streaming.yaml"))
    for event in c.chat_stream(model="command", messages=PIRATE):
        if event.type == "content-delta":
            break
    [first] = span_dicts(span_exporter)
    assert first["status"] == "UNSET"
    assert first["attributes"]["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Ar"}]}
    ]
    assert_an_unread_stream_ends_when_collected(
        lambda: c.chat_stream(model="command", messages=PIRATE), span_exporter
    )


def test_api_error_fails_the_span_and_reaches_the_caller(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """An API error (no recording: the server answers 418) reaches the application as
    the SDK's own exception; the span is ERROR with ``error.type`` the HTTP status."""
    server = replay("gemini/test_generate_content.yaml")  # nothing at /v2/chat
    with pytest.raises(cohere.core.ApiError):
        client(server).chat(model="command", messages=PIRATE)
    [span] = span_dicts(span_exporter)
    # the message quotes the response (its headers too, from 5.16 on): checked, then masked
    event = span["events"][0]["attributes"]
    assert "status_code: 418" in event["exception.message"]
    assert span["status_description"] == event["exception.message"]
    event["exception.message"] = span["status_description"] = "<message>"
    assert [span] == snapshot(
        [
            {
                "name": "chat command",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 3000000000,
                "status": "ERROR",
                "status_description": "<message>",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "cohere",
                    "gen_ai.request.model": "command",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "error.type": "418",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "Tell me a joke, pirate style"}],
                        }
                    ],
                },
                "events": [
                    {
                        "name": "exception",
                        "timestamp": 2000000000,
                        "attributes": {
                            "exception.type": "cohere.core.api_error.ApiError",
                            "exception.message": "<message>",
                            "exception.stacktrace": "<traceback>",
                        },
                    }
                ],
            }
        ]
    )


def test_a_stream_that_fails_on_its_first_read_fails_the_span(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """``chat_stream`` sends its request when first read: an API error raised there (no
    recording: 418) reaches the application from the loop and fails the span, with the
    error's HTTP status as ``error.type``."""
    c = client(replay("gemini/test_generate_content.yaml"))  # nothing at /v2/chat
    stream = c.chat_stream(model="command", messages=PIRATE)
    assert span_dicts(span_exporter) == []  # nothing was sent yet
    with pytest.raises(cohere.core.ApiError):
        next(iter(stream))
    [span] = span_dicts(span_exporter)
    assert span["status"] == "ERROR"
    assert span["attributes"]["error.type"] == "418"
    assert span["attributes"]["gen_ai.request.stream"] is True


def test_a_telemetry_bug_never_reaches_the_application(
    replay: Replay,
    span_exporter: InMemorySpanExporter,
    tracer_provider: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the default ``raise_internal_errors=False``, a translation that raises (here:
    the usage conversion) is logged; the SDK call returns, the stream is read to its end,
    and both spans end."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")

    def broken(usage: Any) -> dict[str, Any]:
        raise RuntimeError("telemetry bug")

    monkeypatch.setattr(cohere_patch, "usage_attributes", broken)
    c = client(replay("cohere/test_cohere_v2_chat_legacy.yaml"))
    assert c.chat(model="command", messages=PIRATE).message is not None
    assert stream_tools(client(replay(TOOL_STREAM)))
    assert [s["name"] for s in span_dicts(span_exporter)] == ["chat command", "chat command-r"]


def test_a_malformed_stream_records_what_is_there(
    replay: Replay, span_exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """The recorded tool-call stream, edited: the second call's arguments cut off before
    their closing brace, a finish reason no release names, and no usage in
    ``message-end``. The span keeps those arguments as the model sent them, the finish
    reason lower-cased, and leaves the token counts out; nothing raises."""
    cassette = derived_cassette(
        TOOL_STREAM,
        tmp_path,
        [
            (
                '"finish_reason":"TOOL_CALL","usage":{"billed_units":{"input_tokens":62,'
                '"output_tokens":28},"tokens":{"input_tokens":968,"output_tokens":83}}',
                '"finish_reason":"SOMETHING_NEW"',
            )
        ],
        drop_lines='"index":1,"delta":{"message":{"tool_calls":{"function":{"arguments":"}"}}}}',
    )
    stream_tools(client(replay(cassette)))
    [span] = span_dicts(span_exporter)
    attributes = span["attributes"]
    assert "gen_ai.usage.input_tokens" not in attributes
    assert attributes["gen_ai.response.finish_reasons"] == ["something_new"]
    assert attributes["gen_ai.output.messages"] == snapshot(
        [
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "reasoning",
                        "content": "I will search for the current time and weather in Tokyo.",
                    },
                    {
                        "type": "tool_call",
                        "name": "get_time",
                        "id": "get_time_dg5wwc00d8v5",
                        "arguments": {"location": "Tokyo"},
                    },
                    {
                        "type": "tool_call",
                        "name": "get_weather",
                        "id": "get_weather_bc8241gkqss5",
                        "arguments": """\
{
    "location": "Tokyo"
""",
                    },
                ],
                "finish_reason": "something_new",
            }
        ]
    )


def test_sdk_outside_the_supported_range_is_left_unpatched(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An SDK version outside the tested range: one warning naming the range, nothing
    patched (the application runs untraced rather than on guessed internals)."""
    assert_left_unpatched_outside_the_range(cohere_patch.SPEC, caplog)


def test_no_content_keeps_only_the_requested_tool_calls(
    replay: Replay, span_exporter: InMemorySpanExporter, tracer_provider: Any
) -> None:
    """Without content capture the prompt, the plan and the tool definitions are not
    recorded; the tool calls the model asked for still are (the judge's evidence)."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="NO_CONTENT")
    stream_tools(client(replay(TOOL_STREAM)))
    [span] = span_dicts(span_exporter)
    attributes = span["attributes"]
    assert not {"gen_ai.input.messages", "gen_ai.tool.definitions"} & set(attributes)
    assert attributes["gen_ai.output.messages"] == snapshot(
        [
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "name": "get_time",
                        "id": "get_time_dg5wwc00d8v5",
                        "arguments": {"location": "Tokyo"},
                    },
                    {
                        "type": "tool_call",
                        "name": "get_weather",
                        "id": "get_weather_bc8241gkqss5",
                        "arguments": {"location": "Tokyo"},
                    },
                ],
            }
        ]
    )


def test_uninstrument_restores_the_sdk_and_instrument_patches_it_again(
    replay: Replay, span_exporter: InMemorySpanExporter, tracer_provider: Any
) -> None:
    """``uninstrument()`` puts the SDK's own methods back (a call makes no span);
    ``instrument()`` again traces the next call."""
    from cohere.v2.client import AsyncV2Client, V2Client

    c = client(replay("cohere/test_cohere_v2_chat_legacy.yaml"))
    assert_uninstrument_round_trip(
        [(cls, name) for cls in (V2Client, AsyncV2Client) for name in ("chat", "chat_stream")],
        lambda: c.chat(model="command", messages=PIRATE),
        span_exporter,
        tracer_provider,
        "chat command",
    )


def test_finish_reasons_and_usage_map_to_the_conventions() -> None:
    """Cohere's capitalised finish reasons map to the conventions' (an unknown one is kept,
    lower-cased); the billed token counts win over the counted ones, and a count the SDK
    typed as a float is an integer again."""
    assert cohere_patch.finish_reason("MAX_TOKENS") == "length"
    assert cohere_patch.finish_reason("TOOL_CALL") == "tool_call"
    assert cohere_patch.finish_reason("SOMETHING_NEW") == "something_new"
    assert cohere_patch.finish_reason(None) is None
    usage = {
        "billed_units": {"input_tokens": 7.0},
        "tokens": {"input_tokens": 69, "output_tokens": 89},
    }
    assert cohere_patch.usage_attributes(usage) == {
        "gen_ai.usage.input_tokens": 7,
        "gen_ai.usage.output_tokens": 89,
    }
    assert cohere_patch.usage_attributes(None) == {}
