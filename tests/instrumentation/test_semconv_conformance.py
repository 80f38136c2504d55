"""The registry check every instrumentation test runs at teardown, tested itself.

``tests/conftest.py`` checks each span tracejudge's instrumentation finishes on the test
provider against the pinned registry (``tests/support/semconv_check.py``). Here: (1) one
call of each kind of span the instrumentation emits (OpenAI chat and Responses, a stream,
embeddings, Anthropic, a tool, an agent, errors, the details event) conforms, so the check
has seen every span type; (2) the check fails on each kind of violation it is for: a wrong
type, an unknown enum member, a missing required attribute, an unknown attribute, a wrong
name or kind, and the deprecated ``exception.escaped`` the SDK's ``record_exception()`` adds.
The negative cases use a private provider, so the teardown check does not see them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import openai
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

import tracejudge
from tests.support.otel import make_tracer_provider
from tests.support.replay import ReplayServer
from tests.support.semconv_check import registry
from tracejudge import semconv as sc
from tracejudge.instrumentation._runtime import SCOPE_NAME

Replay = Callable[..., ReplayServer]
SAY: list[Any] = [{"role": "user", "content": "Say this is a test"}]


class Declined(Exception):
    """What the failing tool raises."""


@tracejudge.tool(name="refund_api.create", effect="write")
def _refund(order_id: str) -> dict[str, str]:
    return {"refund_id": "rf_1", "order_id": order_id}


@tracejudge.tool(effect="notify")
def _notify(to: str) -> None:
    raise Declined(f"cannot mail {to}")


def _openai(server: ReplayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)


def _kinds(spans: tuple[ReadableSpan, ...]) -> set[tuple[str, str]]:
    return {(str((s.attributes or {}).get(sc.GEN_AI_OPERATION_NAME)), s.kind.name) for s in spans}


@pytest.mark.parametrize("capture", ["SPAN_ONLY", "EVENT_ONLY"])
def test_every_kind_of_span_conforms(
    capture: str,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    replay: Replay,
) -> None:
    """Each span type the instrumentation makes, in both content modes, checks clean."""
    tracejudge.instrument(
        tracer_provider=tracer_provider, capture_content=capture, raise_internal_errors=True
    )
    try:
        with tracejudge.agent("refund-agent", case_id="c-1", variant_id="v1") as run:
            _openai(
                replay("openai/test_chat_completion_with_content.yaml")
            ).chat.completions.create(
                model="gpt-4o-mini", messages=SAY, temperature=0.5, max_tokens=50, seed=42
            )
            for _ in _openai(
                replay("openai/test_chat_completion_streaming.yaml")
            ).chat.completions.create(
                model="gpt-4", messages=SAY, stream=True, stream_options={"include_usage": True}
            ):
                pass
            _openai(
                replay("openai/test_responses_create_basic[content_mode0].yaml")
            ).responses.create(
                model="gpt-4o-mini",
                input="Say this is a test",
                instructions="You are a helpful assistant.",
            )
            _openai(replay("openai/test_embeddings_with_content.yaml")).embeddings.create(
                model="text-embedding-3-small", input="This is a test for embeddings"
            )
            with pytest.raises(openai.NotFoundError):
                _openai(replay("openai/test_chat_completion_404.yaml")).chat.completions.create(
                    model="this-model-does-not-exist", messages=SAY
                )
            server = replay("anthropic/test_anthropic_message_create_with_events_with_content.yaml")
            anthropic.Anthropic(api_key="k", base_url=server.origin, max_retries=0).messages.create(
                model="claude-3-opus-20240229",
                max_tokens=1024,
                messages=[{"role": "user", "content": "Tell me a joke about OpenTelemetry"}],
            )
            _refund("B-1")
            with pytest.raises(Declined):
                _notify("dana@example.com")
            run.set_output("Refund rf_1 for order B-1 is on its way.")
    finally:
        tracejudge.uninstrument()
    spans = span_exporter.get_finished_spans()
    assert all(s.instrumentation_scope is not None for s in spans)
    assert {s.instrumentation_scope.name for s in spans if s.instrumentation_scope} == {SCOPE_NAME}
    assert _kinds(spans) == {
        ("chat", "CLIENT"),
        ("embeddings", "CLIENT"),
        ("execute_tool", "INTERNAL"),
        ("invoke_agent", "INTERNAL"),
    }
    assert {e.name for s in spans for e in s.events} == (
        {"exception", "gen_ai.client.inference.operation.details"}
        if capture == "EVENT_ONLY"
        else {"exception"}
    )
    for span in spans:
        assert registry().check_span(span) == [], span.name


# --- the check fails where it should ---------------------------------------------------


@pytest.fixture
def private() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A provider the teardown check does not look at: these spans break rules on purpose."""
    provider, exporter = make_tracer_provider()
    yield provider, exporter
    provider.shutdown()


def _span(
    private: tuple[TracerProvider, InMemorySpanExporter],
    attributes: dict[str, Any],
    *,
    name: str = "chat gpt-4o-mini",
    kind: SpanKind = SpanKind.CLIENT,
    event: tuple[str, dict[str, Any]] | None = None,
) -> list[str]:
    provider, exporter = private
    exporter.clear()
    span = provider.get_tracer(SCOPE_NAME).start_span(name, kind=kind, attributes=attributes)
    if event is not None:
        span.add_event(*event)
    span.end()
    (finished,) = exporter.get_finished_spans()
    return registry().check_span(finished)


CHAT = {
    sc.GEN_AI_OPERATION_NAME: "chat",
    sc.GEN_AI_PROVIDER_NAME: "openai",
    sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
}


def test_a_conformant_span_passes(private: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    """The baseline for the cases below: the same span, right, has no problem; error.type
    (core's open enum, only ``_OTHER`` listed) takes any string."""
    assert _span(private, {**CHAT, sc.ERROR_TYPE: "404", sc.GEN_AI_USAGE_INPUT_TOKENS: 3}) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            {sc.GEN_AI_USAGE_INPUT_TOKENS: "12"},
            "gen_ai.usage.input_tokens='12': expected int, got str",
        ),
        (
            {sc.GEN_AI_REQUEST_TEMPERATURE: 1},
            "gen_ai.request.temperature=1: expected double, got int",
        ),
        ({sc.GEN_AI_REQUEST_STREAM: "yes"}, "gen_ai.request.stream='yes': expected boolean"),
        ({sc.GEN_AI_PROVIDER_NAME: "open-ai"}, "gen_ai.provider.name='open-ai' is not a member"),
        ({sc.TRACEJUDGE_TOOL_EFFECT: "delete"}, "tracejudge.tool.effect='delete' is not a member"),
        ({sc.ERROR_TYPE: 404}, "error.type: expected a string"),
        ({"gen_ai.usage.prompt_tokens": 3}, "attribute gen_ai.usage.prompt_tokens is not in"),
        (
            {sc.GEN_AI_RESPONSE_FINISH_REASONS: ("stop", 1)},
            "gen_ai.response.finish_reasons=('stop', 1): expected string[]",
        ),
    ],
)
def test_wrong_types_and_values_fail(
    private: tuple[TracerProvider, InMemorySpanExporter], change: dict[str, Any], problem: str
) -> None:
    """A value of the wrong type, an enum value not listed, an undefined attribute."""
    problems = _span(private, {**CHAT, **change})
    assert len(problems) == 1, problems
    assert problem in problems[0]
    assert problems[0].startswith("span 'chat gpt-4o-mini': ")


def test_missing_required_attributes_fail(
    private: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """``gen_ai.provider.name`` is required on inference spans; the OpenAI refinement also
    requires ``gen_ai.request.model``."""
    (problem,) = _span(private, {sc.GEN_AI_OPERATION_NAME: "chat"}, name="chat")
    assert "required attribute(s) of gen_ai.inference.client missing" in problem
    assert "'gen_ai.provider.name'" in problem
    openai_only = {sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_PROVIDER_NAME: "openai"}
    (problem,) = _span(private, openai_only, name="chat")
    assert "missing: ['gen_ai.request.model']" in problem


def test_wrong_name_kind_or_operation_fail(
    private: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """The span name follows the definition's pattern; the kind is the defined one."""
    (problem,) = _span(private, CHAT, name="openai.chat")
    assert "name should be 'chat gpt-4o-mini' (from ['{gen_ai.operation.name} " in problem
    (problem,) = _span(private, CHAT, kind=SpanKind.INTERNAL)
    assert "kind internal is not one 'chat' is defined with (['client'])" in problem
    problems = _span(private, {**CHAT, sc.GEN_AI_OPERATION_NAME: "think"}, name="think")
    assert "span 'think': no span definition for gen_ai.operation.name='think'" in problems
    assert any("gen_ai.operation.name='think' is not a member" in p for p in problems)
    agent = {sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "refund"}
    assert _span(private, agent, name="invoke_agent refund", kind=SpanKind.INTERNAL) == []
    (problem,) = _span(private, agent, name="invoke_agent", kind=SpanKind.INTERNAL)
    assert "name should be 'invoke_agent refund'" in problem
    del agent[sc.GEN_AI_AGENT_NAME]
    assert _span(private, agent, name="invoke_agent", kind=SpanKind.INTERNAL) == []


def test_the_sdks_exception_event_fails(
    private: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """What ``Span.record_exception()`` writes breaks the registry (``exception.escaped`` is
    deprecated and not in it); what tracejudge writes does not."""
    provider, exporter = private
    exporter.clear()
    span = provider.get_tracer(SCOPE_NAME).start_span(
        "chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=CHAT
    )
    span.record_exception(ValueError("boom"))
    span.end()
    (finished,) = exporter.get_finished_spans()
    assert registry().check_span(finished) == [
        "span 'chat gpt-4o-mini': event 'exception': attribute exception.escaped is not in the "
        "registry"
    ]
    ours = {
        sc.EXCEPTION_TYPE: "ValueError",
        sc.EXCEPTION_MESSAGE: "boom",
        sc.EXCEPTION_STACKTRACE: "Traceback ...",
    }
    assert _span(private, CHAT, event=(sc.EVENT_EXCEPTION, ours)) == []
    (problem,) = _span(private, CHAT, event=("gen_ai.thoughts", {}))
    assert "event 'gen_ai.thoughts' is not in the registry" in problem
    details = sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS
    (problem,) = _span(private, CHAT, event=(details, {sc.GEN_AI_INPUT_MESSAGES: "[]"}))
    assert "required attribute(s) missing: ['gen_ai.operation.name', 'gen_ai.provider.name']" in (
        problem
    )


def test_our_own_span_types_are_checked_by_their_definition(
    private: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """A span without ``gen_ai.operation.name`` is one of our own types (the guardrail span,
    ``tracejudge.guardrail.internal``) when it has that type's required attributes; its
    name and attribute types are then checked like any other span's."""
    guardrail = {
        sc.TRACEJUDGE_GUARDRAIL_NAME: "no_pii",
        sc.TRACEJUDGE_GUARDRAIL_TRIGGERED: False,
        sc.GEN_AI_AGENT_NAME: "refund",
    }
    assert _span(private, guardrail, name="guardrail no_pii", kind=SpanKind.INTERNAL) == []
    (problem,) = _span(private, guardrail, name="no_pii", kind=SpanKind.INTERNAL)
    assert "name should be 'guardrail no_pii'" in problem
    wrong = {**guardrail, sc.TRACEJUDGE_GUARDRAIL_TRIGGERED: "no"}
    (problem,) = _span(private, wrong, name="guardrail no_pii", kind=SpanKind.INTERNAL)
    assert "tracejudge.guardrail.triggered='no': expected boolean" in problem
    untriggered = {sc.TRACEJUDGE_GUARDRAIL_NAME: "no_pii"}  # a required attribute missing
    problems = _span(private, untriggered, name="guardrail no_pii", kind=SpanKind.INTERNAL)
    assert problems == [
        "span 'guardrail no_pii': no span definition for gen_ai.operation.name=None"
    ]
