"""``instrument()``/``uninstrument()``: patching, idempotence, duplicates, failures, providers.

The SDK is the real ``openai`` package over loopback HTTP (recorded responses). Where a
test needs "another GenAI instrumentor", it stands in for it with a span carrying that
instrumentor's attributes, or a ``functools.wraps`` wrapper from outside the SDK,
because none of those packages is installed here; the docstrings say so.
"""

from __future__ import annotations

import functools
import logging
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
from openai.resources.chat.completions.completions import AsyncCompletions, Completions
from opentelemetry import context as otel_context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracejudge
from tests.support.guards import PROCESS_S
from tests.support.replay import ReplayServer
from tracejudge.instrumentation import MethodPatches, active_patchers
from tracejudge.instrumentation import _patcher as patcher_mod
from tracejudge.instrumentation import openai as tj_openai

Replay = Callable[..., ReplayServer]
SAY_TEST: list[Any] = [{"role": "user", "content": "Say this is a test"}]


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    patcher_mod.reset_warnings()
    yield
    tracejudge.uninstrument()
    patcher_mod.unregister_patcher("missing-sdk")
    patcher_mod.unregister_patcher("moved-sdk")
    patcher_mod.reset_warnings()


def _chat_once(server: ReplayServer) -> Any:
    c = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    return c.chat.completions.create(model="gpt-4o-mini", messages=SAY_TEST)


def test_uninstrument_restores_originals(tracer_provider: TracerProvider) -> None:
    """After ``uninstrument()`` the SDK's methods are the very same objects as before."""
    methods = [(cls, m) for cls in (Completions, AsyncCompletions) for m in ("create", "parse")]
    before = [cls.__dict__[m] for cls, m in methods]
    tracejudge.instrument(tracer_provider=tracer_provider)
    assert all(cls.__dict__[m] is not b for (cls, m), b in zip(methods, before, strict=True))
    assert "openai" in active_patchers()
    tracejudge.uninstrument()
    assert all(cls.__dict__[m] is b for (cls, m), b in zip(methods, before, strict=True))
    assert active_patchers() == ()


def test_instrument_twice_is_idempotent(
    tracer_provider: TracerProvider, replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """Calling ``instrument()`` again re-applies settings without stacking wrappers: one
    call still gives one span, and one ``uninstrument()`` restores the original."""
    original = Completions.__dict__["create"]
    tracejudge.instrument(tracer_provider=tracer_provider)
    tracejudge.instrument(tracer_provider=tracer_provider)
    current = Completions.__dict__["create"]
    assert getattr(current, patcher_mod.WRAPPED_MARK) is original
    _chat_once(replay("openai/test_chat_completion_with_content.yaml"))
    assert len(span_exporter.get_finished_spans()) == 1
    tracejudge.uninstrument()
    assert Completions.__dict__["create"] is original


def test_a_method_an_sdk_object_bound_while_instrumented_goes_quiet_on_uninstrument(
    tracer_provider: TracerProvider, replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """openai's ``with_raw_response`` is a cached property that binds ``create`` on first use
    (ChatOpenAI calls through it): the wrapper it bound outlives the patch. After
    ``uninstrument()`` that wrapper passes calls through untraced (before the fix it kept
    emitting spans the user had turned off), and a later ``instrument()`` traces it again."""
    server = replay("openai/test_chat_completion_with_content.yaml")
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    tracejudge.instrument(tracer_provider=tracer_provider)
    raw = client.chat.completions.with_raw_response
    raw.create(model="gpt-4o-mini", messages=SAY_TEST).parse()
    assert len(span_exporter.get_finished_spans()) == 1
    tracejudge.uninstrument()
    answer = raw.create(model="gpt-4o-mini", messages=SAY_TEST).parse()
    assert answer.choices[0].message.content  # the call itself still works
    assert len(span_exporter.get_finished_spans()) == 1
    # instrumenting again traces the very same bound path again, with the new runtime
    tracejudge.instrument(tracer_provider=tracer_provider)
    raw.create(model="gpt-4o-mini", messages=SAY_TEST).parse()
    assert len(span_exporter.get_finished_spans()) == 2


@pytest.mark.parametrize(
    "foreign_attributes",
    [
        {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai"},
        {"openinference.span.kind": "LLM"},
        {"llm.request.type": "chat"},
    ],
    ids=["genai-conventions", "openinference", "openllmetry"],
)
def test_no_second_span_under_foreign_model_span(
    foreign_attributes: dict[str, str],
    tracer_provider: TracerProvider,
    replay: Replay,
    span_exporter: InMemorySpanExporter,
) -> None:
    """When another instrumentor's model span is current (stood in for by a span with its
    attributes; those packages are not installed here), we add no second span."""
    tracejudge.instrument(tracer_provider=tracer_provider)
    tracer = tracer_provider.get_tracer("other-instrumentor")
    with tracer.start_as_current_span("ChatCompletion", attributes=foreign_attributes):
        _chat_once(replay("openai/test_chat_completion_with_content.yaml"))
    assert [s.name for s in span_exporter.get_finished_spans()] == ["ChatCompletion"]


def test_suppression_keys_are_honoured(
    tracer_provider: TracerProvider, replay: Replay, span_exporter: InMemorySpanExporter
) -> None:
    """The OTel ``suppress_instrumentation`` context key turns our spans off too."""
    tracejudge.instrument(tracer_provider=tracer_provider)
    token = otel_context.attach(otel_context.set_value("suppress_instrumentation", True))
    try:
        _chat_once(replay("openai/test_chat_completion_with_content.yaml"))
    finally:
        otel_context.detach(token)
    assert span_exporter.get_finished_spans() == ()


def test_method_wrapped_by_foreign_instrumentor_is_left_alone(
    tracer_provider: TracerProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """A ``create`` already wrapped from outside the SDK (a ``functools.wraps`` wrapper
    defined here, standing in for a wrapt-less instrumentor) is not wrapped again: one
    warning names it, the other methods are still patched."""
    original = Completions.__dict__["create"]

    @functools.wraps(original)
    def foreign(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs)

    Completions.create = foreign  # type: ignore[method-assign]
    try:
        with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
            tracejudge.instrument(tracer_provider=tracer_provider)
        assert Completions.__dict__["create"] is foreign
        assert getattr(AsyncCompletions.__dict__["create"], patcher_mod.WRAPPED_MARK, None)
        warnings = [r.getMessage() for r in caplog.records if "already wrapped" in r.getMessage()]
        assert len(warnings) == 1
        assert "Completions.create" in warnings[0]
    finally:
        tracejudge.uninstrument()
        Completions.create = original  # type: ignore[method-assign]


def test_request_choke_point_wrapped_by_foreign_instrumentor(
    tracer_provider: TracerProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """If another instrumentor wrapped ``SyncAPIClient.request`` (OpenInference's choke
    point; stood in for by a ``functools.wraps`` wrapper defined here), OpenAI is left
    unpatched with one warning, since our span would duplicate theirs."""
    from openai._base_client import SyncAPIClient

    original = SyncAPIClient.__dict__["request"]

    @functools.wraps(original)
    def foreign(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs)

    SyncAPIClient.request = foreign  # type: ignore[method-assign]
    try:
        before = Completions.__dict__["create"]
        with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
            tracejudge.instrument(tracer_provider=tracer_provider)
        assert Completions.__dict__["create"] is before
        assert [r for r in caplog.records if "does not patch openai" in r.getMessage()]
    finally:
        tracejudge.uninstrument()
        SyncAPIClient.request = original  # type: ignore[method-assign]


class _MissingSdkPatcher:
    name = "missing-sdk"

    def available(self) -> bool:
        return patcher_mod.sdk_importable("tracejudge_no_such_sdk")

    def patch(self, runtime: Any) -> None:
        raise AssertionError("must not be called")

    def unpatch(self) -> None:
        pass


class _Dummy:
    def present(self) -> int:
        return 1


class _MovedSdkPatcher:
    name = "moved-sdk"
    unpatched = False

    def __init__(self) -> None:
        self._patches = MethodPatches()

    def available(self) -> bool:
        return True

    def patch(self, runtime: Any) -> None:
        self._patches.patch_method(_Dummy, "present", lambda f: lambda self: 2)
        self._patches.patch_method(_Dummy, "moved_away", lambda f: f)

    def unpatch(self) -> None:
        self._patches.restore()
        _MovedSdkPatcher.unpatched = True


def test_missing_or_moved_sdk_is_said_once_and_rest_works(
    tracer_provider: TracerProvider,
    replay: Replay,
    span_exporter: InMemorySpanExporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A patcher whose SDK is missing is noted once at debug level (the application does
    not use it: no warning); one whose methods moved is skipped with exactly one warning
    naming it (also on a second ``instrument()``); a partial patch is rolled back; OpenAI
    is still traced."""
    patcher_mod.register_patcher("missing-sdk", _MissingSdkPatcher)
    patcher_mod.register_patcher("moved-sdk", _MovedSdkPatcher)
    with caplog.at_level(logging.DEBUG, logger="tracejudge.instrumentation"):
        tracejudge.instrument(tracer_provider=tracer_provider)
        tracejudge.instrument(tracer_provider=tracer_provider)
    missing = [r for r in caplog.records if "missing-sdk" in r.getMessage()]
    assert [r.levelno for r in missing] == [logging.DEBUG]
    moved = [r for r in caplog.records if "moved-sdk" in r.getMessage()]
    assert [r.levelno for r in moved] == [logging.WARNING]
    assert "moved_away" in moved[0].getMessage()
    assert not any("no supported model SDK" in r.getMessage() for r in caplog.records)
    assert _MovedSdkPatcher.unpatched
    assert _Dummy().present() == 1
    assert "openai" in active_patchers()
    assert "moved-sdk" not in active_patchers()
    _chat_once(replay("openai/test_chat_completion_with_content.yaml"))
    assert len(span_exporter.get_finished_spans()) == 1


def test_internal_error_never_breaks_the_call(
    tracer_provider: TracerProvider,
    replay: Replay,
    span_exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bug in our response translation is logged, the span still ends, and the user
    gets the SDK's result; with ``raise_internal_errors=True`` (tests) it surfaces."""

    def broken(call: Any, completion: Any) -> None:
        raise RuntimeError("telemetry bug")

    server = replay("openai/test_chat_completion_with_content.yaml")
    tracejudge.instrument(tracer_provider=tracer_provider)
    monkeypatch.setattr(tj_openai._CHAT, "finish", broken)
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        result = _chat_once(server)
    assert result.choices[0].message.content == "This is a test."
    assert len(span_exporter.get_finished_spans()) == 1
    assert any("telemetry bug" in r.getMessage() for r in caplog.records)

    tracejudge.instrument(tracer_provider=tracer_provider, raise_internal_errors=True)
    with pytest.raises(RuntimeError, match="telemetry bug"):
        _chat_once(server)


def test_explicit_providers_win(
    tracer_provider: TracerProvider,
    otel_metrics: tuple[MeterProvider, InMemoryMetricReader],
    replay: Replay,
    span_exporter: InMemorySpanExporter,
) -> None:
    """``tracer_provider=``/``meter_provider=`` receive the telemetry, not the globals."""
    tracejudge.instrument(tracer_provider=tracer_provider, meter_provider=otel_metrics[0])
    _chat_once(replay("openai/test_chat_completion_with_content.yaml"))
    assert len(span_exporter.get_finished_spans()) == 1
    assert otel_metrics[1].get_metrics_data() is not None


def test_bad_arguments_fail_before_patching() -> None:
    """A typo in the capture mode or a bad size cap is a clear error, and nothing is
    patched."""
    original = Completions.__dict__["create"]
    with pytest.raises(ValueError, match="capture mode"):
        tracejudge.instrument(capture_content="SPAN_ONLYY")
    with pytest.raises(ValueError, match="max_attribute_bytes"):
        tracejudge.instrument(max_attribute_bytes=1)
    with pytest.raises(ValueError, match="redaction pattern"):
        tracejudge.instrument(redact_patterns=["(unclosed"])
    assert Completions.__dict__["create"] is original


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )


_BLOCK_SDKS = """
    import importlib.abc, sys
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name in BLOCKED or name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(name)
            return None
    sys.meta_path.insert(0, Block())
"""


def test_instrument_works_without_any_sdk_installed() -> None:
    """``import tracejudge; tracejudge.instrument()`` succeeds when neither SDK can be
    imported (all blocked by an import hook in a fresh interpreter), with one warning that no
    model call will be traced, not one per SDK."""
    proc = _run_python(
        'BLOCKED = ("openai", "anthropic", "google.genai", "botocore", "mistralai", "cohere", '
        '"litellm")\n'
        + textwrap.dedent(_BLOCK_SDKS)
        + textwrap.dedent(
            """
            import tracejudge
            tracejudge.instrument()
            from tracejudge.instrumentation import active_patchers
            print("active:", active_patchers())
            """
        )
    )
    assert proc.returncode == 0, proc.stderr
    assert "active: ()" in proc.stdout
    installed = (
        "no supported model SDK is installed (openai, anthropic, gemini, bedrock, mistral, cohere, "
        "litellm)"
    )
    assert proc.stderr.count(installed) == 1
    assert "SDK not installed" not in proc.stderr


def test_an_openai_only_application_hears_nothing_about_anthropic() -> None:
    """With only ``openai`` installed, ``instrument()`` says nothing at the default log
    level: Anthropic is an SDK the application does not use (a debug note only)."""
    code = textwrap.dedent(_BLOCK_SDKS) + textwrap.dedent(
        """
        import logging
        logging.basicConfig(level=LEVEL)
        import openai
        import tracejudge
        tracejudge.instrument()
        from tracejudge.instrumentation import active_patchers
        print("active:", active_patchers())
        """
    )
    quiet = _run_python('BLOCKED = ("anthropic",)\nLEVEL = "WARNING"\n' + code)
    assert quiet.returncode == 0, quiet.stderr
    assert "active: ('openai',)" in quiet.stdout
    assert quiet.stderr == ""
    debug = _run_python('BLOCKED = ("anthropic",)\nLEVEL = "DEBUG"\n' + code)
    assert "DEBUG:tracejudge.instrumentation:tracejudge: anthropic SDK not installed" in (
        debug.stderr
    )


def test_default_provider_only_when_application_has_none() -> None:
    """With no application provider, ``instrument()`` installs an SDK provider exporting
    over OTLP (behind the guard that skips an endpoint nobody listens on); with one, it
    uses the application's and never replaces it."""
    proc = _run_python(
        """
        from opentelemetry import trace
        import tracejudge
        from tracejudge.instrumentation import get_runtime
        tracejudge.instrument()
        p = trace.get_tracer_provider()
        procs = p._active_span_processor._span_processors
        exporter = procs[0].span_exporter  # the guard around the OTLP exporter
        print("default:", type(p).__name__, type(exporter.inner).__module__)
        assert get_runtime().tracer_provider is p
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "default: TracerProvider opentelemetry.exporter.otlp.proto.http" in proc.stdout

    proc = _run_python(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        app = TracerProvider()
        trace.set_tracer_provider(app)
        import tracejudge
        from tracejudge.instrumentation import get_runtime
        tracejudge.instrument()
        assert trace.get_tracer_provider() is app
        assert get_runtime().tracer_provider is app
        print("kept")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "kept" in proc.stdout
