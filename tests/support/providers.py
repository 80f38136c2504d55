"""Checks every model-provider patch must pass, written once for the provider tests."""

from __future__ import annotations

import dataclasses
import gc
import logging
from collections.abc import Callable, Iterable
from types import ModuleType

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.spans import span_dicts
from tracejudge.instrumentation import _patcher
from tracejudge.instrumentation._integration import SupportedVersions
from tracejudge.instrumentation._provider import ProviderPatcher, ProviderSpec
from tracejudge.instrumentation._runtime import current_runtime


def assert_left_unpatched_outside_the_range(
    spec: ProviderSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """``spec`` with a supported range the installed SDK is outside: patching twice gives
    one warning naming the SDK and the range, and patches nothing (the application runs
    untraced rather than on guessed internals)."""
    _patcher.reset_warnings()
    runtime = current_runtime()
    assert runtime is not None
    patcher = ProviderPatcher(dataclasses.replace(spec, supported=SupportedVersions("0.1", "0.2")))
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        patcher.patch(runtime)
        patcher.patch(runtime)
    assert patcher._patches.originals == []
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"tracejudge: {spec.distribution} ")
    assert "outside the range tracejudge supports (>=0.1,<0.2)" in warnings[0]


def assert_uninstrument_round_trip(
    methods: Iterable[tuple[type | ModuleType, str]],
    call: Callable[[], object],
    span_exporter: InMemorySpanExporter,
    tracer_provider: TracerProvider,
    span_name: str,
) -> None:
    """``uninstrument()`` puts each patched ``(class, method)`` (or ``(module, function)``)
    back as the SDK's own (a ``call`` then makes no span); ``instrument()`` again traces
    the next ``call``."""
    originals = {(cls, name): getattr(cls, name).__tracejudge_wrapped__ for cls, name in methods}
    import tracejudge

    tracejudge.uninstrument()
    assert all(cls.__dict__[name] is fn for (cls, name), fn in originals.items())
    call()
    assert span_dicts(span_exporter) == []
    tracejudge.instrument(tracer_provider=tracer_provider, capture_content="SPAN_ONLY")
    call()
    assert [s["name"] for s in span_dicts(span_exporter)] == [span_name]


def assert_an_unread_stream_ends_when_collected(
    open_stream: Callable[[], object], span_exporter: InMemorySpanExporter
) -> None:
    """A stream dropped without being read ends its span when it is collected, with no
    output (nothing arrived)."""
    before = len(span_exporter.get_finished_spans())
    unread = open_stream()
    del unread
    gc.collect()
    spans = span_dicts(span_exporter)
    assert len(spans) == before + 1
    assert "gen_ai.output.messages" not in spans[-1]["attributes"]
