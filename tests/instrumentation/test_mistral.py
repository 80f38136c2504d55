"""The Mistral patcher against the real ``mistralai`` SDK and recorded API responses.

Every test drives the installed SDK over loopback HTTP to
``tests.support.replay.ReplayServer``, which replays cassettes recorded against the Mistral
API by traceloop/openllmetry and Arize-ai/openinference (Apache-2.0, see
tests/fixtures/MANIFEST.tsv). Spans go to the real OTel SDK and are compared whole, as
snapshots; every span is also checked against the pinned convention registry.

No recording of a non-streamed Mistral response with tool calls exists in either source:
tool calls are tested on the recorded stream that asks for one. The malformed responses
(invalid tool-call JSON, an unknown finish reason, no usage) are recorded ones edited in
the test (``derived_cassette``), each edit named where it is made.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

try:  # mistralai 2.0 and later
    from mistralai.client import Mistral, errors
except ImportError:  # 1.x (the oldest release claimed, scripts/sdk-matrix.sh)
    from mistralai import Mistral  # type: ignore[attr-defined,no-redef]
    from mistralai import models as errors  # type: ignore[attr-defined,no-redef]
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.support.guards import PROCESS_S
from tests.support.providers import (
    assert_an_unread_stream_ends_when_collected,
    assert_left_unpatched_outside_the_range,
    assert_uninstrument_round_trip,
)
from tests.support.replay import ReplayServer, derived_cassette
from tests.support.spans import span_dicts
from tracejudge.instrumentation.mistral import _patch as mistral_patch

pytestmark = pytest.mark.usefixtures("instrumented")

Replay = Callable[..., ReplayServer]
JOKE: Any = [{"role": "user", "content": "Tell me a joke about OpenTelemetry"}]
WEATHER_QUESTION: Any = [{"role": "user", "content": "What's the weather like in San Francisco?"}]
WEATHER_TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "finds the weather for a given city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {
                        "type": "string",
                        "description": "The city to find the weather for, e.g. 'London'",
                    }
                },
                "required": ["city"],
            },
        },
    }
]
TOOL_STREAM = "mistral/test_synchronous_streaming_chat_completions_with_tool_call_response_emits_expected_spans.yaml"


def client(server: ReplayServer) -> Mistral:
    return Mistral(api_key="test-key", server_url=server.origin)


def stream_weather(c: Mistral) -> list[Any]:
    """The recorded request of the tool-call stream, as openinference made it."""
    stream = c.chat.stream(
        model="mistral-small-latest",
        messages=WEATHER_QUESTION,
        tools=WEATHER_TOOLS,
        tool_choice="any",
        temperature=0.7,
        top_p=1.0,
        safe_prompt=False,
    )
    return list(stream)


def test_complete(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """The basic Mistral model call: one CLIENT ``chat {model}`` span, provider
    ``mistral_ai``, with the prompt, the answer, usage and the response id."""
    server = replay("mistral/test_mistralai_chat_legacy.yaml")
    reply = client(server).chat.complete(model="mistral-tiny", messages=JOKE)
    assert reply.choices[0].message is not None
    assert not server.unmatched
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "chat mistral-tiny",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "mistral_ai",
                    "gen_ai.request.model": "mistral-tiny",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Tell me a joke about OpenTelemetry"}
                            ],
                        }
                    ],
                    "gen_ai.response.id": "e9459fcd56c742e0875167c9926c6aae",
                    "gen_ai.response.model": "mistral-tiny",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 11,
                    "gen_ai.usage.output_tokens": 96,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": """\
Here's a light-hearted, tech-themed joke related to OpenTelemetry:

Why did OpenTelemetry bring a map to a trace?

Because it didn't want to get lost in all the distributed service calls!

(Note: This is a playful joke and does not necessarily reflect the actual functionality of OpenTelemetry. It's designed to bring a smile and spread some positivity amidst the tech talk.)\
""",
                                }
                            ],
                            "finish_reason": "stop",
                        }
                    ],
                },
            }
        ]
    )


def test_stream_with_a_tool_call(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """A stream whose chunk carries the whole tool call (Mistral sends it at once, its
    arguments as JSON text): the ``tool_call`` part with its id and parsed arguments,
    the request's sampling parameters, the tool definitions and the last chunk's usage."""
    server = replay(TOOL_STREAM)
    events = stream_weather(client(server))
    assert len(events) == 2
    assert span_dicts(span_exporter) == snapshot(
        [
            {
                "name": "chat mistral-small-latest",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.temperature": 0.7,
                    "gen_ai.request.top_p": 1.0,
                    "gen_ai.request.stream": True,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "mistral_ai",
                    "gen_ai.request.model": "mistral-small-latest",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.response.time_to_first_chunk": "<ttfc>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {
                                    "type": "text",
                                    "content": "What's the weather like in San Francisco?",
                                }
                            ],
                        }
                    ],
                    "gen_ai.tool.definitions": [
                        {
                            "type": "function",
                            "name": "get_weather",
                            "description": "finds the weather for a given city",
                            "parameters": {
                                "type": "object",
                                "properties": {
                                    "city": {
                                        "type": "string",
                                        "description": "The city to find the weather for, e.g. 'London'",
                                    }
                                },
                                "required": ["city"],
                            },
                        }
                    ],
                    "gen_ai.response.id": "8d641f96950f401892c98eff1e4335cd",
                    "gen_ai.response.model": "mistral-small-latest",
                    "gen_ai.response.finish_reasons": ["tool_calls"],
                    "gen_ai.usage.input_tokens": 96,
                    "gen_ai.usage.output_tokens": 23,
                    "gen_ai.output.messages": [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "name": "get_weather",
                                    "id": "EscTeQY62",
                                    "arguments": {"city": "San Francisco"},
                                }
                            ],
                            "finish_reason": "tool_call",
                        }
                    ],
                },
            }
        ]
    )


def test_the_requested_tool_call_id_reaches_the_tool_span(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """The judge joins a tool execution to the model turn that asked for it: a ``@tool``
    run after the stream that requested it carries the call id and the description the
    request gave the tool."""

    @tracejudge.tool
    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    server = replay(TOOL_STREAM)
    with tracejudge.agent("weather-agent"):
        events = stream_weather(client(server))
        call = events[-1].data.choices[0].delta.tool_calls[0]
        get_weather(city="San Francisco")
    assert call.id == "EscTeQY62"
    tool = next(s for s in span_dicts(span_exporter) if s["name"] == "execute_tool get_weather")
    assert tool["attributes"]["gen_ai.tool.call.id"] == "EscTeQY62"
    assert tool["attributes"]["gen_ai.tool.description"] == "finds the weather for a given city"


def test_async_complete_and_stream(replay: Replay, span_exporter: InMemorySpanExporter) -> None:
    """``complete_async`` and ``stream_async`` are traced like their sync twins; a
    stream's text deltas are joined into one text part."""
    server = replay("mistral/test_mistralai_async_chat_legacy.yaml")
    c = client(server)

    async def complete() -> Any:
        return await c.chat.complete_async(model="mistral-tiny", messages=JOKE)

    assert asyncio.run(complete()).choices
    streamed = replay("mistral/test_mistralai_async_streaming_chat_legacy.yaml")
    s = client(streamed)

    async def stream() -> str:
        events = await s.chat.stream_async(model="mistral-tiny", messages=JOKE)
        return "".join([str(e.data.choices[0].delta.content or "") async for e in events])

    text = asyncio.run(stream())
    spans = span_dicts(span_exporter)
    assert spans[1]["attributes"]["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": text}
    ]
    assert span_dicts(span_exporter, drop=("gen_ai.output.messages",)) == snapshot(
        [
            {
                "name": "chat mistral-tiny",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 2000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "mistral_ai",
                    "gen_ai.request.model": "mistral-tiny",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Tell me a joke about OpenTelemetry"}
                            ],
                        }
                    ],
                    "gen_ai.response.id": "bda521177c084183bba5eaf32ad99027",
                    "gen_ai.response.model": "mistral-tiny",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 11,
                    "gen_ai.usage.output_tokens": 99,
                },
            },
            {
                "name": "chat mistral-tiny",
                "kind": "CLIENT",
                "context": {"trace_id": 2, "span_id": 2},
                "parent": None,
                "start_time": 3000000000,
                "end_time": 4000000000,
                "status": "UNSET",
                "attributes": {
                    "gen_ai.request.stream": True,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "mistral_ai",
                    "gen_ai.request.model": "mistral-tiny",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "gen_ai.response.time_to_first_chunk": "<ttfc>",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Tell me a joke about OpenTelemetry"}
                            ],
                        }
                    ],
                    "gen_ai.response.id": "6dc321029f5d4aa5899c1b38c9657a61",
                    "gen_ai.response.model": "mistral-tiny",
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.usage.input_tokens": 11,
                    "gen_ai.usage.output_tokens": 80,
                },
            },
        ]
    )


def test_stream_left_early_ends_the_span_with_what_arrived(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A ``break`` out of the stream, then leaving its ``with`` block (which closes it),
    ends the span at once (no error status), keeping what arrived; a stream dropped
    unread ends when it is collected."""
    server = replay("mistral/test_mistralai_streaming_chat_legacy.yaml")
    chat = client(server).chat
    with chat.stream(model="mistral-tiny", messages=JOKE) as stream:
        for event in stream:
            if event.data.choices[0].delta.content:
                break
        assert span_dicts(span_exporter) == []  # the stream can still be read on
    [first] = span_dicts(span_exporter)
    assert first["status"] == "UNSET"
    assert first["attributes"]["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Here"}]}
    ]
    assert_an_unread_stream_ends_when_collected(
        lambda: chat.stream(model="mistral-tiny", messages=JOKE), span_exporter
    )


def test_api_error_fails_the_span_and_reaches_the_caller(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """An API error (no recording: the server answers 418) reaches the application as
    the SDK's own exception; the span is ERROR with ``error.type`` the HTTP status."""
    server = replay("gemini/test_generate_content.yaml")  # nothing at /v1/chat/completions
    with pytest.raises(errors.SDKError):
        client(server).chat.complete(model="mistral-unknown", messages=JOKE)
    spans = span_dicts(span_exporter)
    # the error's module and its message's layout vary by SDK major: checked, then masked
    event = spans[0]["events"][0]["attributes"]
    assert event["exception.type"].endswith(".SDKError")
    assert event["exception.message"].startswith("API error occurred: Status 418")
    assert spans[0]["status_description"] == event["exception.message"]
    event["exception.type"] = "<SDKError>"
    event["exception.message"] = spans[0]["status_description"] = "<message>"
    assert spans == snapshot(
        [
            {
                "name": "chat mistral-unknown",
                "kind": "CLIENT",
                "context": {"trace_id": 1, "span_id": 1},
                "parent": None,
                "start_time": 1000000000,
                "end_time": 3000000000,
                "status": "ERROR",
                "status_description": "<message>",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "mistral_ai",
                    "gen_ai.request.model": "mistral-unknown",
                    "server.address": "127.0.0.1",
                    "server.port": "<port>",
                    "error.type": "418",
                    "gen_ai.input.messages": [
                        {
                            "role": "user",
                            "parts": [
                                {"type": "text", "content": "Tell me a joke about OpenTelemetry"}
                            ],
                        }
                    ],
                },
                "events": [
                    {
                        "name": "exception",
                        "timestamp": 2000000000,
                        "attributes": {
                            "exception.type": "<SDKError>",
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
    """With the default ``raise_internal_errors=False``, a translation that raises (here:
    the response content reader) is logged; the SDK call returns and the span ends."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")

    def broken(msg: Any) -> list[dict[str, Any]]:
        raise RuntimeError("telemetry bug")

    monkeypatch.setattr(mistral_patch, "message_content", broken)
    server = replay("mistral/test_mistralai_chat_legacy.yaml")
    reply = client(server).chat.complete(model="mistral-tiny", messages=JOKE)
    assert reply.choices
    assert [s["name"] for s in span_dicts(span_exporter)] == ["chat mistral-tiny"]


def test_a_malformed_stream_records_what_is_there(
    replay: Replay, span_exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """The recorded tool-call stream, edited: the arguments cut off mid-JSON, a finish
    reason no release names, and no usage. The span keeps the arguments as the model sent
    them, the finish reason as it came, and leaves the token counts out; nothing raises."""
    cassette = derived_cassette(
        TOOL_STREAM,
        tmp_path,
        [
            ('"{\\"city\\": \\"San Francisco\\"}"', '"{\\"city\\": \\"San Fr"'),
            ('"finish_reason":"tool_calls"', '"finish_reason":"something_new"'),
            (',"usage":{"prompt_tokens":96,"total_tokens":119,"completion_tokens":23}', ""),
        ],
    )
    events = stream_weather(client(replay(cassette)))
    assert events[-1].data.choices[0].delta.tool_calls[0].function.arguments == '{"city": "San Fr'
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
                        "type": "tool_call",
                        "name": "get_weather",
                        "id": "EscTeQY62",
                        "arguments": '{"city": "San Fr',
                    }
                ],
                "finish_reason": "something_new",
            }
        ]
    )


def test_a_body_the_sdk_cannot_read_fails_the_span_with_its_error(
    replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """A ``complete`` call answered by a body it cannot read (the recorded stream's, with
    status 200): the SDK raises its own error to the application, and the span is ERROR
    with that error's class as ``error.type``, not the 200 the error carries."""
    server = replay(TOOL_STREAM)
    with pytest.raises(errors.SDKError) as raised:
        client(server).chat.complete(model="mistral-small-latest", messages=WEATHER_QUESTION)
    assert raised.value.status_code == 200
    [span] = span_dicts(span_exporter)
    assert span["status"] == "ERROR"
    cls = type(raised.value)
    assert span["attributes"]["error.type"] == f"{cls.__module__}.{cls.__qualname__}"


def test_sdk_outside_the_supported_range_is_left_unpatched(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An SDK version outside the tested range: one warning naming the range, nothing
    patched (the application runs untraced rather than on guessed internals)."""
    assert_left_unpatched_outside_the_range(mistral_patch.SPEC, caplog)


def test_no_content_keeps_only_the_requested_tool_calls(
    replay: Replay, span_exporter: InMemorySpanExporter, tracer_provider: Any
) -> None:
    """Without content capture the prompt and the tool definitions are not recorded; the
    tool call the model asked for still is (the judge's evidence)."""
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="NO_CONTENT")
    stream_weather(client(replay(TOOL_STREAM)))
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
                        "name": "get_weather",
                        "id": "EscTeQY62",
                        "arguments": {"city": "San Francisco"},
                    }
                ],
            }
        ]
    )


def test_uninstrument_restores_the_sdk_and_instrument_patches_it_again(
    replay: Replay, span_exporter: InMemorySpanExporter, tracer_provider: Any
) -> None:
    """``uninstrument()`` puts the SDK's own methods back (a call makes no span);
    ``instrument()`` again traces the next call."""
    chat = importlib.import_module(mistral_patch.installed_layout().targets[0].module).Chat
    names = ("complete", "complete_async", "stream", "stream_async")
    c = client(replay("mistral/test_mistralai_chat_legacy.yaml"))
    assert_uninstrument_round_trip(
        [(chat, name) for name in names],
        lambda: c.chat.complete(model="mistral-tiny", messages=JOKE),
        span_exporter,
        tracer_provider,
        "chat mistral-tiny",
    )


def test_the_installed_release_picks_its_layout() -> None:
    """mistralai 1.x lives at ``mistralai``, later majors at ``mistralai.client``: the
    patch applies the spec of the installed one."""
    major = importlib.metadata.version("mistralai").split(".")[0]
    expected = mistral_patch.SPEC_1X if major == "1" else mistral_patch.SPEC
    assert mistral_patch.installed_layout() is expected
    assert mistral_patch.SPEC_1X.targets[0].module == "mistralai.chat"
    assert mistral_patch.SPEC.stream_classes[0] == (
        "mistralai.client.utils.eventstreaming.EventStream"
    )


def test_an_sdk_imported_after_instrument_is_patched_on_import() -> None:
    """From mistralai 2.0 on, ``mistralai`` is a namespace package, which runs no code an
    import hook could follow: ``instrument()`` waits for ``mistralai.client`` instead (for
    1.x, ``mistralai``), so an application that imports the SDK after ``instrument()`` is
    traced (a fresh interpreter: nothing imported the SDK before)."""
    code = textwrap.dedent(
        """
        import importlib, sys
        import tracejudge
        from opentelemetry.sdk.trace import TracerProvider
        tracejudge.instrument(tracer_provider=TracerProvider())
        assert not any(m.startswith("mistralai.") for m in sys.modules)  # the SDK: not yet
        from tracejudge.instrumentation.mistral._patch import installed_layout
        chat = importlib.import_module(installed_layout().targets[0].module).Chat
        print(hasattr(chat.complete, "__tracejudge_wrapped__"))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"
