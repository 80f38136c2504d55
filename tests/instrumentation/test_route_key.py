"""``tracejudge.route.key``: the key a load balancer routes on, on every span of a run.

Why it matters: behind the OpenTelemetry Collector's ``load_balancing`` exporter
(``routing_key: attributes``) a conversation's turns, and a shadow with its stable run, reach
one collector only if every one of their spans carries the same key; the exporter reads it
from the first span of each trace in a batch, so one span without it can send the others
astray. The spans here are made by the real instrumentation (``agent``, ``tool``) and by a
plain tracer on the same provider, standing for third-party instrumentation.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tracejudge import semconv as sc
from tracejudge.instrumentation import RouteKeyProcessor

KEY = sc.TRACEJUDGE_ROUTE_KEY


def _provider(service: str, **resource: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: service, **resource}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.fixture
def app() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """The application's provider (service ``refund-agent``), instrumented with the
    defaults: ``route_key=True``."""
    provider, exporter = _provider("refund-agent")
    tracejudge.instrument(tracer_provider=provider, raise_internal_errors=True)
    yield provider, exporter
    tracejudge.uninstrument()
    provider.shutdown()


def _keys(exporter: InMemorySpanExporter) -> dict[str, object]:
    spans: tuple[ReadableSpan, ...] = exporter.get_finished_spans()
    return {s.name: (s.attributes or {}).get(KEY) for s in spans}


def _turn(provider: TracerProvider, *, shadow: bool = False, **identity: str) -> None:
    """One agent run: a tool of ours and a span of another instrumentation inside."""
    other = provider.get_tracer("httpx-instrumentation")
    with tracejudge.agent("refunds", shadow=shadow, **identity) as run:
        lookup = tracejudge.tool("lookup_order", effect="read", arguments={"id": "A1"})
        with lookup as t, other.start_as_current_span("GET /orders/A1"):
            t.set_result({"id": "A1"})
        run.set_output("done")


def test_every_span_of_a_conversation_turn_carries_its_key(
    app: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = app
    _turn(provider, conversation_id="conv-42")
    key = "conversation:refund-agent:conv-42"
    assert _keys(exporter) == {
        "GET /orders/A1": key,
        "execute_tool lookup_order": key,
        "invoke_agent refunds": key,
    }


def test_a_stable_run_and_its_shadow_share_the_request_key_across_services(
    app: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """The shadow runs in another deployment (another service name): the request key
    leaves the service out, since pairing is by the request id alone."""
    provider, exporter = app
    _turn(provider, request_id="req-7")
    canary, canary_spans = _provider("refund-agent-canary")
    tracejudge.instrument(tracer_provider=canary, raise_internal_errors=True)
    _turn(canary, request_id="req-7", shadow=True)
    assert set(_keys(exporter).values()) == {"request:req-7"}
    assert set(_keys(canary_spans).values()) == {"request:req-7"}
    assert len(canary_spans.get_finished_spans()) == 3


def test_the_same_conversation_id_from_two_services_is_two_keys(
    app: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """Two tenants' "1": two conversations, routed apart (the key names the service)."""
    provider, exporter = app
    _turn(provider, conversation_id="1")
    other, other_spans = _provider("billing-agent")
    tracejudge.instrument(tracer_provider=other, raise_internal_errors=True)
    _turn(other, conversation_id="1")
    assert set(_keys(exporter).values()) == {"conversation:refund-agent:1"}
    assert set(_keys(other_spans).values()) == {"conversation:billing-agent:1"}


def test_a_conversation_wins_over_a_request_and_a_child_keeps_its_parents_key(
    app: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """One key per trace: a model call inside naming another conversation (the OpenAI
    ``conversation`` parameter) does not split the run."""
    provider, exporter = app
    other = provider.get_tracer("openai-instrumentation")
    chat = other.start_as_current_span(
        "chat gpt-4o", attributes={sc.GEN_AI_CONVERSATION_ID: "conv_abc"}
    )
    with tracejudge.agent("refunds", conversation_id="c-1", request_id="r-1"), chat:
        pass
    assert _keys(exporter) == {
        "chat gpt-4o": "conversation:refund-agent:c-1",
        "invoke_agent refunds": "conversation:refund-agent:c-1",
    }


def test_the_open_server_span_around_the_run_takes_its_key(
    app: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """The web framework's span is the trace's root and started before the run knew its
    conversation: it gets the key when the run starts (it is still open). A span that
    ended before (the auth check) has been exported already and keeps none: it routes
    by trace id, apart from the run, which it is no part of."""
    provider, exporter = app
    web = provider.get_tracer("fastapi-instrumentation")
    with web.start_as_current_span("POST /chat"):
        with web.start_as_current_span("auth"):
            pass
        _turn(provider, conversation_id="c-9")
    key = "conversation:refund-agent:c-9"
    assert _keys(exporter) == {
        "auth": None,
        "GET /orders/A1": key,
        "execute_tool lookup_order": key,
        "invoke_agent refunds": key,
        "POST /chat": key,
    }


def test_a_run_with_neither_gets_no_key(
    app: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """No attribute at all (the shipped Collector config routes such spans by trace
    id); an empty conversation id from other instrumentation is no key either."""
    provider, exporter = app
    _turn(provider)
    other = provider.get_tracer("other")
    with other.start_as_current_span("chat", attributes={sc.GEN_AI_CONVERSATION_ID: ""}):
        pass
    assert set(_keys(exporter).values()) == {None}
    assert len(exporter.get_finished_spans()) == 4


def test_a_process_serving_one_conversation_keys_every_span_from_its_resource() -> None:
    provider, exporter = _provider("support-worker", **{sc.SESSION_ID: "s-5"})
    tracejudge.instrument(tracer_provider=provider, raise_internal_errors=True)
    try:
        _turn(provider)
    finally:
        tracejudge.uninstrument()
    assert set(_keys(exporter).values()) == {"conversation:support-worker:s-5"}


def test_route_key_scope_overrides_and_empty_keys_are_refused(
    app: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = app
    with tracejudge.route_key("conversation:refund-agent:c-1"):
        _turn(provider, request_id="r-1", shadow=True)
    _turn(provider)  # the scope is closed: no key
    keys = [(s.attributes or {}).get(KEY) for s in exporter.get_finished_spans()]
    assert keys == ["conversation:refund-agent:c-1"] * 3 + [None] * 3
    with pytest.raises(ValueError, match="non-empty string key"):
        tracejudge.route_key("")
    with pytest.raises(ValueError, match="conversation_id must be a non-empty string"):
        tracejudge.agent("refunds", conversation_id="")


def test_route_key_false_and_uninstrument_turn_it_off() -> None:
    provider, exporter = _provider("refund-agent")
    tracejudge.instrument(tracer_provider=provider, route_key=False)
    try:
        _turn(provider, conversation_id="c-1")
        tracejudge.instrument(tracer_provider=provider)  # on again: one processor, not two
        _turn(provider, conversation_id="c-2")
    finally:
        tracejudge.uninstrument()
    other = provider.get_tracer("other")
    with other.start_as_current_span("after", attributes={sc.GEN_AI_CONVERSATION_ID: "c-3"}):
        pass
    keys = [(s.attributes or {}).get(KEY) for s in exporter.get_finished_spans()]
    assert keys == [None] * 3 + ["conversation:refund-agent:c-2"] * 3 + [None]
    with pytest.raises(TypeError, match="route_key must be a bool"):
        tracejudge.instrument(tracer_provider=provider, route_key="yes")  # type: ignore[arg-type]


def test_a_provider_built_by_hand_takes_the_processor() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: "svc"}))
    provider.add_span_processor(RouteKeyProcessor())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    root = tracer.start_as_current_span("root", attributes={sc.TRACEJUDGE_REQUEST_ID: "r"})
    with root, tracer.start_as_current_span("child"):
        pass
    assert _keys(exporter) == {"child": "request:r", "root": "request:r"}


def test_a_new_provider_gets_its_own_processor_where_a_collected_ones_id_is_reused() -> None:
    """The processors ``instrument()`` added were remembered by ``id(provider)``: once a
    provider was collected, a new one at the same address passed for it and got no
    processor, so its spans had no key (a flaky failure of the test above, depending on
    which test had run before on the worker). Fifty providers made and dropped in turn,
    which in CPython reuses addresses: every one keys its spans."""
    for i in range(50):
        provider, exporter = _provider("refund-agent")
        tracejudge.instrument(tracer_provider=provider, raise_internal_errors=True)
        try:
            _turn(provider, conversation_id=f"c-{i}")
        finally:
            tracejudge.uninstrument()
            provider.shutdown()
        assert set(_keys(exporter).values()) == {f"conversation:refund-agent:c-{i}"}, i
        del provider, exporter
        gc.collect()


@pytest.mark.parametrize(
    ("resource", "attributes"),
    [
        ({}, {}),
        ({}, {sc.GEN_AI_CONVERSATION_ID: "c1"}),
        ({}, {sc.SESSION_ID: "s1"}),
        ({}, {sc.TRACEJUDGE_REQUEST_ID: "r1"}),
        ({sc.SESSION_ID: "rs"}, {sc.TRACEJUDGE_REQUEST_ID: "r1"}),
        ({sc.TRACEJUDGE_REQUEST_ID: "rr"}, {}),
        ({sc.TRACEJUDGE_REQUEST_ID: "rr"}, {sc.TRACEJUDGE_REQUEST_ID: "r1"}),
        ({sc.GEN_AI_CONVERSATION_ID: "rc"}, {sc.SESSION_ID: "s1"}),
        ({sc.TRACEJUDGE_REQUEST_ID: "rr"}, {sc.GEN_AI_CONVERSATION_ID: ""}),
    ],
)
def test_the_processor_keys_a_span_as_key_of_does(
    resource: dict[str, str], attributes: dict[str, str]
) -> None:
    """The processor remembers its resource's part of the key; every span, the first and
    later ones, gets what ``key_of`` gives for its attributes and resource."""
    from tracejudge.instrumentation._route import key_of

    provider, exporter = _provider("svc", **resource)
    provider.add_span_processor(RouteKeyProcessor())
    tracer = provider.get_tracer("t")
    for _ in range(2):
        tracer.start_span("s", attributes=attributes).end()
    spans = exporter.get_finished_spans()
    want = key_of(attributes, provider.resource.attributes)
    assert [(s.attributes or {}).get(KEY) for s in spans] == [want, want]
