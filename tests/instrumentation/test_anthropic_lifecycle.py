"""Anthropic patcher: errors, exactly one span next to the SDK's own tracing,
uninstrument, content capture off, metrics and odd input.

Real parts throughout: the installed ``anthropic`` SDK over loopback HTTP to
``tests.support.replay.ReplayServer`` (cassettes recorded by traceloop/openllmetry,
Apache-2.0), the OTel SDK with in-memory span exporter and metric reader.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import pytest
import yaml
from anthropic.resources.messages import AsyncMessages, Messages
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tests.support.ports import ReservedPort
from tests.support.replay import CASSETTE_ROOT, ReplayServer
from tracejudge.instrumentation import instrument, uninstrument

JOKE = [{"role": "user", "content": "Tell me a joke about OpenTelemetry"}]
CREATE = "anthropic/test_anthropic_message_create_with_events_with_content.yaml"
TOOLS = "anthropic/test_anthropic_tools_with_events_with_content.yaml"
STREAM = "anthropic/test_anthropic_message_streaming_with_events_with_content.yaml"
BASE_CLIENT = importlib.import_module("anthropic._base_client")
SDK_TRACES = hasattr(BASE_CLIENT, "start_api_call_span")
"""Whether this SDK emits its own OpenTelemetry span per API call (2.x does, 0.x not)."""


class Pipeline:
    """An in-memory tracer and meter provider, and instrument() pointed at them."""

    def __init__(self, tracer_provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
        self.exporter = exporter
        self.tracer_provider = tracer_provider
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def instrument(self, capture: str = "SPAN_ONLY") -> None:
        instrument(
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            capture_content=capture,
            raise_internal_errors=True,
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def histogram(self, name: str) -> list[HistogramDataPoint]:
        data = self.reader.get_metrics_data()
        points: list[HistogramDataPoint] = []
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name == name:
                        points.extend(
                            p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)
                        )
        return points


@pytest.fixture
def pipeline(otel_traces: tuple[TracerProvider, InMemorySpanExporter]) -> Iterator[Pipeline]:
    """On the shared test provider (its spans are checked against the conventions)."""
    yield Pipeline(*otel_traces)
    uninstrument()


def client(base_url: str, **options: Any) -> Any:
    """A real client (typed Any: the suite runs on SDK 0.40 and 2.x alike)."""
    return anthropic.Anthropic(api_key="test-key", base_url=base_url, max_retries=0, **options)


def create(c: Any, model: str = "claude-3-opus-20240229", **extra: Any) -> Any:
    return c.messages.create(model=model, max_tokens=1024, messages=JOKE, **extra)


def qualified(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


def test_http_error_marks_span_failed_and_reraises(pipeline: Pipeline) -> None:
    """A failed model call is a fact the judge needs (retries, budgets); the span must
    say ERROR with a low-cardinality ``error.type`` while the app gets the SDK's own
    exception unchanged."""
    pipeline.instrument()
    # /elsewhere/v1/messages has no recording: the replay server answers with an error.
    with ReplayServer([CREATE]) as server, pytest.raises(anthropic.APIStatusError) as raised:
        create(client(server.origin + "/elsewhere"))
    status = str(raised.value.status_code)  # the replay server's "no recording" status
    assert status.startswith("4") or status.startswith("5")
    (span,) = pipeline.spans()
    assert span.name == "chat claude-3-opus-20240229"
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description
    assert span.attributes is not None
    assert span.attributes["error.type"] == status
    assert "gen_ai.response.id" not in span.attributes
    assert [e.name for e in span.events] == ["exception"]
    (point,) = pipeline.histogram("gen_ai.client.operation.duration")
    assert point.attributes is not None
    assert point.attributes["error.type"] == status


def test_connection_error_is_recorded_with_its_exception_type(
    reserve_port: Callable[[], ReservedPort], pipeline: Pipeline
) -> None:
    """No HTTP status exists when the server is unreachable; ``error.type`` falls back
    to the exception's qualified class name so such failures still group together."""
    pipeline.instrument()
    unreachable = reserve_port()
    port = unreachable.port
    with pytest.raises(anthropic.APIConnectionError) as raised:
        create(client(unreachable.url))
    (span,) = pipeline.spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes["error.type"] == qualified(raised.value)
    assert span.attributes["server.port"] == port


def _sdk_client(server: ReplayServer, pipeline: Pipeline) -> Any:
    """A client whose own SDK tracing (2.x) exports to the same pipeline as ours."""
    options = {"open_telemetry": {"tracer_provider": pipeline.tracer_provider}}
    return client(server.origin, **(options if SDK_TRACES else {}))


def test_exactly_one_span_next_to_the_sdks_own_tracing(pipeline: Pipeline) -> None:
    """SDK 2.x emits its own ``anthropic.messages.create`` span by default; with
    tracejudge on, each call must still produce exactly one span (ours, conformant),
    for plain, streamed and helper-streamed calls alike — duplicates would double
    every model call and token count the judge sees."""
    with ReplayServer([CREATE]) as server:
        create(_sdk_client(server, pipeline))
    own = [s.name for s in pipeline.spans()]
    assert own == (["anthropic.messages.create"] if SDK_TRACES else [])
    pipeline.exporter.clear()

    pipeline.instrument()
    with ReplayServer([CREATE]) as server:
        create(_sdk_client(server, pipeline))
    with ReplayServer([STREAM]) as server:
        c = _sdk_client(server, pipeline)
        for _ in create(c, model="claude-3-haiku-20240307", stream=True):
            pass
        with c.messages.stream(
            model="claude-3-haiku-20240307", max_tokens=1024, messages=JOKE
        ) as stream:
            stream.until_done()
    spans = pipeline.spans()
    assert [s.name for s in spans] == [
        "chat claude-3-opus-20240229",
        "chat claude-3-haiku-20240307",
        "chat claude-3-haiku-20240307",
    ]
    assert {s.instrumentation_scope.name for s in spans if s.instrumentation_scope} == {
        "tracejudge"
    }

    uninstrument()  # the SDK's span comes back for calls we no longer trace
    pipeline.exporter.clear()
    with ReplayServer([CREATE]) as server:
        create(_sdk_client(server, pipeline))
    assert [s.name for s in pipeline.spans()] == own


def test_uninstrument_restores_the_sdk_exactly(pipeline: Pipeline) -> None:
    """``uninstrument()`` must leave the SDK as it found it (methods and the SDK's own
    span function), and instrumenting twice must not wrap twice."""
    originals = {
        (cls, name): cls.__dict__[name]
        for cls in (Messages, AsyncMessages)
        for name in ("create", "stream")
    }
    sdk_span_fn = getattr(BASE_CLIENT, "start_api_call_span", None)
    pipeline.instrument()
    pipeline.instrument()
    assert Messages.__dict__["create"] is not originals[(Messages, "create")]
    with ReplayServer([CREATE]) as server:
        create(client(server.origin))
    assert len(pipeline.spans()) == 1

    uninstrument()
    for (cls, name), original in originals.items():
        assert cls.__dict__[name] is original
    assert getattr(BASE_CLIENT, "start_api_call_span", None) is sdk_span_fn
    with ReplayServer([CREATE]) as server:
        create(client(server.origin))
    assert len(pipeline.spans()) == 1


def test_no_content_mode_keeps_only_tool_calls(pipeline: Pipeline) -> None:
    """Content is opt-in by the conventions; with capture off no prompt, system text,
    tool schema or answer text may leave the process — only the tool calls the model
    requested, which trajectory rules cannot work without."""
    pipeline.instrument(capture="NO_CONTENT")
    with ReplayServer([TOOLS]) as server:
        create(
            client(server.origin),
            model="claude-3-5-sonnet-20240620",
            system="secret system prompt",
            tools=[{"name": "get_time", "input_schema": {"type": "object"}}],
        )
    (span,) = pipeline.spans()
    attrs = dict(span.attributes or {})
    for key in ("gen_ai.input.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions"):
        assert key not in attrs
    output = json.loads(str(attrs["gen_ai.output.messages"]))
    assert [p["type"] for p in output[0]["parts"]] == ["tool_call", "tool_call"]
    assert "secret" not in json.dumps(attrs)


def test_metrics_duration_and_token_usage(pipeline: Pipeline) -> None:
    """Budgets and dashboards read the GenAI client metrics: one duration point and
    input/output token points per call, with the conventions' attributes."""
    pipeline.instrument()
    with ReplayServer([TOOLS]) as server:
        create(client(server.origin), model="claude-3-5-sonnet-20240620")
    (duration,) = pipeline.histogram("gen_ai.client.operation.duration")
    assert dict(duration.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-3-5-sonnet-20240620",
        "gen_ai.response.model": "claude-3-5-sonnet-20240620",
        "server.address": "127.0.0.1",
        "server.port": server.port,
    }
    tokens = {
        str((p.attributes or {})["gen_ai.token.type"]): p.sum
        for p in pipeline.histogram("gen_ai.client.token.usage")
    }
    assert tokens == {"input": 514, "output": 152}


def test_unknown_blocks_are_kept_not_dropped(pipeline: Pipeline) -> None:
    """Content the patcher has no convention part for (new block types, server-tool
    results) must be recorded as a generic part carrying its type — never dropped,
    never a crash in the application's call."""
    pipeline.instrument()
    odd = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "mystery_block", "payload": {"k": 1}},
                {"type": "image", "source": {"type": "url", "url": "https://e.x/a.png"}},
            ],
        }
    ]
    with ReplayServer([CREATE]) as server:
        client(server.origin).messages.create(
            model="claude-3-opus-20240229", max_tokens=1024, messages=odd
        )
    (span,) = pipeline.spans()
    messages = json.loads(str((span.attributes or {})["gen_ai.input.messages"]))
    assert messages == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "hi"},
                {"type": "mystery_block", "payload": {"k": 1}},
                {"type": "uri", "modality": "image", "uri": "https://e.x/a.png"},
            ],
        }
    ]


def test_with_raw_response_is_traced_and_parses_once(pipeline: Pipeline) -> None:
    """Agents read rate-limit headers through ``with_raw_response``; those calls are
    model calls too. The span must carry the response, and the application must get
    the very same parsed Message / Stream object the SDK caches."""
    pipeline.instrument()
    with ReplayServer([CREATE]) as server:
        raw = client(server.origin).messages.with_raw_response.create(
            model="claude-3-opus-20240229", max_tokens=1024, messages=JOKE
        )
        message = raw.parse()
    assert message is raw.parse()
    with ReplayServer([STREAM]) as server:
        raw_stream = client(server.origin).messages.with_raw_response.create(
            model="claude-3-haiku-20240307", max_tokens=1024, messages=JOKE, stream=True
        )
        events = list(raw_stream.parse())
    first, second = pipeline.spans()
    assert (first.attributes or {})["gen_ai.response.id"] == message.id
    assert (first.attributes or {})["gen_ai.usage.output_tokens"] == 220
    assert (second.attributes or {})["gen_ai.response.id"] == "msg_01MXWxhWoPSgrYhjTuMDM6F1"
    assert (second.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    assert events[-1].type == "message_stop"


def test_with_streaming_response_leaves_the_body_to_the_application(pipeline: Pipeline) -> None:
    """A ``with_streaming_response`` body is the application's to read; tracing must
    not read it, and the span still ends (request side only) instead of leaking."""
    pipeline.instrument()
    with (
        ReplayServer([CREATE]) as server,
        client(server.origin).messages.with_streaming_response.create(
            model="claude-3-opus-20240229", max_tokens=1024, messages=JOKE
        ) as response,
    ):
        assert not response.http_response.is_closed
        body = json.loads(response.read())
    (span,) = pipeline.spans()
    assert body["id"] == "msg_01TPXhkPo8jy6yQMrMhjpiAE"
    assert "gen_ai.response.id" not in (span.attributes or {})
    assert (span.attributes or {})["gen_ai.request.model"] == "claude-3-opus-20240229"


def test_beta_messages_are_traced_like_messages(pipeline: Pipeline) -> None:
    """``client.beta.messages`` is the same Messages API with beta features; agents
    using it must not fall out of judging (nor get the SDK's non-conformant span)."""
    pipeline.instrument()
    with ReplayServer([CREATE]) as server:
        reply = client(server.origin).beta.messages.create(
            model="claude-3-opus-20240229", max_tokens=1024, messages=JOKE
        )
    (span,) = pipeline.spans()
    assert span.name == "chat claude-3-opus-20240229"
    assert (span.attributes or {})["gen_ai.response.id"] == reply.id


_ERROR_STREAM = (
    "event: message_start\n"
    'data: {"type":"message_start","message":{"id":"msg_err","type":"message",'
    '"role":"assistant","model":"claude-3-haiku-20240307","content":[],"stop_reason":null,'
    '"stop_sequence":null,"usage":{"input_tokens":17,"output_tokens":1}}}\n\n'
    "event: content_block_start\n"
    'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    "event: content_block_delta\n"
    'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n'
    "event: error\n"
    'data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
)


def test_error_event_mid_stream_fails_the_span_with_the_api_error_type(
    pipeline: Pipeline, tmp_path: Any
) -> None:
    """An overloaded API can fail a stream after it started (HTTP 200, then an
    ``error`` event); the span must be ERROR with the API's error type (not "200"),
    keep the partial output, and the application must get the SDK's exception.

    The cassette is written here (no recording of this failure exists in the recorded
    fixtures); its events follow the API's documented SSE shapes, and the real SDK
    parses them from a real socket."""
    cassette = tmp_path / "error_stream.yaml"
    cassette.write_text(
        json.dumps(
            {
                "interactions": [
                    {
                        "request": {
                            "method": "POST",
                            "uri": "https://api.anthropic.com/v1/messages",
                        },
                        "response": {
                            "status": {"code": 200, "message": "OK"},
                            "headers": {"Content-Type": ["text/event-stream; charset=utf-8"]},
                            "body": {"string": _ERROR_STREAM},
                        },
                    }
                ]
            }
        )
    )
    pipeline.instrument()
    with ReplayServer([cassette]) as server:
        stream = create(client(server.origin), model="claude-3-haiku-20240307", stream=True)
        with pytest.raises(anthropic.APIStatusError):
            for _ in stream:
                pass
    (span,) = pipeline.spans()
    attrs = dict(span.attributes or {})
    assert span.status.status_code is StatusCode.ERROR
    assert attrs["error.type"] == "overloaded_error"
    assert attrs["gen_ai.response.id"] == "msg_err"
    assert json.loads(str(attrs["gen_ai.output.messages"])) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Hel"}]}
    ]
    (event,) = span.events
    assert event.name == "exception"
    # the stream-envelope path records the event itself: no deprecated exception.escaped
    assert sorted(event.attributes or {}) == [
        "exception.message",
        "exception.stacktrace",
        "exception.type",
    ]


def test_vertex_client_reports_its_provider(pipeline: Pipeline, tmp_path: Any) -> None:
    """The same Messages resource serves Vertex AI (and Bedrock); cost and policy
    rules key on ``gen_ai.provider.name``, which must name the platform called.

    The recorded create response is re-served under Vertex's rawPredict path (the
    recording itself is unchanged); the real AnthropicVertex client sends to it."""
    recorded = yaml.safe_load((CASSETTE_ROOT / CREATE).read_text(encoding="utf-8"))
    path = "/projects/p/locations/us-east5/publishers/anthropic/models/claude-3-opus@20240229"
    recorded["interactions"][0]["request"]["uri"] = f"https://vertex.invalid{path}:rawPredict"
    cassette = tmp_path / "vertex.yaml"
    cassette.write_text(yaml.safe_dump(recorded), encoding="utf-8")
    pipeline.instrument()
    with ReplayServer([cassette]) as server:
        vertex: Any = anthropic.AnthropicVertex(
            region="us-east5",
            project_id="p",
            access_token="test-token",
            base_url=server.origin,
            max_retries=0,
        )
        reply = vertex.messages.create(
            model="claude-3-opus@20240229", max_tokens=1024, messages=JOKE
        )
    (span,) = pipeline.spans()
    attrs = dict(span.attributes or {})
    assert span.name == "chat claude-3-opus@20240229"
    assert attrs["gen_ai.provider.name"] == "gcp.vertex_ai"
    assert attrs["gen_ai.response.id"] == reply.id == "msg_01TPXhkPo8jy6yQMrMhjpiAE"


def test_event_only_mode_puts_content_on_one_details_event(pipeline: Pipeline) -> None:
    """Deployments that store content apart from traces use EVENT_ONLY; a streamed
    call's input and rebuilt output must then arrive together on one
    ``gen_ai.client.inference.operation.details`` event, not as span attributes."""
    pipeline.instrument(capture="EVENT_ONLY")
    with ReplayServer([STREAM]) as server:
        for _ in create(client(server.origin), model="claude-3-haiku-20240307", stream=True):
            pass
    (span,) = pipeline.spans()
    assert "gen_ai.input.messages" not in (span.attributes or {})
    assert "gen_ai.output.messages" not in (span.attributes or {})
    (event,) = [e for e in span.events if e.name == "gen_ai.client.inference.operation.details"]
    details = dict(event.attributes or {})
    assert json.loads(str(details["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": JOKE[0]["content"]}]}
    ]
    (output,) = json.loads(str(details["gen_ai.output.messages"]))
    assert output["finish_reason"] == "stop"
    assert output["parts"][0]["content"].startswith("Here's an OpenTelemetry")


def test_conversation_id_given_to_the_sdk_is_kept(pipeline: Pipeline) -> None:
    """SDK 2.x lets the application name the conversation for the SDK's own span;
    since ours replaces that span, the id must move to ours (and on SDKs without the
    option none may be invented)."""
    pipeline.instrument()
    options = {"open_telemetry": {"conversation_id": "conv_42"}} if SDK_TRACES else {}
    with ReplayServer([CREATE]) as server:
        create(client(server.origin, **options))
    (span,) = pipeline.spans()
    expected = "conv_42" if SDK_TRACES else None
    assert (span.attributes or {}).get("gen_ai.conversation.id") == expected


def test_a_telemetry_failure_never_reaches_the_application(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Instrumentation must never break the agent it observes: if our own conversion
    code fails, the call still returns the SDK's result, the span still ends, and the
    failure is logged. (The failure is injected into our converter, the one fake
    here: no real input makes correct code fail on purpose.)"""
    from tracejudge.instrumentation.anthropic import _convert

    def broken(message: Any) -> list[dict[str, Any]]:
        raise RuntimeError("converter bug")

    monkeypatch.setattr(_convert, "output_messages", broken)
    instrument(
        tracer_provider=pipeline.tracer_provider,
        meter_provider=pipeline.meter_provider,
        capture_content="SPAN_ONLY",
    )
    with ReplayServer([CREATE]) as server:
        reply = create(client(server.origin))
    assert reply.id == "msg_01TPXhkPo8jy6yQMrMhjpiAE"
    (span,) = pipeline.spans()
    assert span.end_time is not None
    assert "converter bug" in caplog.text
