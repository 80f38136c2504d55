"""Deferred patching: ``instrument()`` patches an SDK when the application imports it.

Why it matters: importing ``anthropic`` costs seconds; ``instrument()`` must not make
apps that never use it pay that, yet an SDK imported after ``instrument()`` must still
be traced, an import must never fail because of us, and ``uninstrument()`` must leave
no hook behind. The real SDKs run in fresh interpreters (the only place they are not
imported yet) against the cassette replay server; the hook mechanics are checked
in-process on throwaway modules written to ``tmp_path``.
"""

from __future__ import annotations

import importlib
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

import tracejudge
from tests.support.guards import PROCESS_S
from tests.support.replay import ReplayServer
from tracejudge.instrumentation import _patcher as patcher_mod
from tracejudge.instrumentation import active_patchers, pending_sdks
from tracejudge.instrumentation._import_hook import ImportHooks, _Finder

REPO = Path(__file__).resolve().parents[2]

_CHILD_PRELUDE = """
import sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import tracejudge
from tracejudge.instrumentation import active_patchers, pending_sdks
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
MESSAGES = [{"role": "user", "content": "Say this is a test"}]
"""


def _run_child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CHILD_PRELUDE + textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
        cwd=REPO,
    )


@pytest.fixture
def servers() -> Iterator[tuple[ReplayServer, ReplayServer]]:
    """One replay server per SDK (OpenAI chat, Anthropic messages)."""
    oa = ReplayServer(["openai/test_chat_completion_with_content.yaml"]).start()
    an = ReplayServer(
        ["anthropic/test_anthropic_message_create_with_events_with_content.yaml"]
    ).start()
    yield oa, an
    oa.stop()
    an.stop()


def test_sdks_imported_after_instrument_are_patched_on_import(
    servers: tuple[ReplayServer, ReplayServer],
) -> None:
    """In a fresh interpreter ``instrument()`` imports neither SDK; importing each one
    afterwards patches it, and one real call per SDK gives exactly one span each. The
    module keeps its real loader (our wrapper is invisible to the SDK)."""
    oa, an = servers
    proc = _run_child(
        """
        tracejudge.instrument(tracer_provider=provider)
        assert "openai" not in sys.modules and "anthropic" not in sys.modules
        print("pending:", pending_sdks(), "active:", active_patchers())
        import openai
        import anthropic
        print("loader:", type(openai.__loader__).__name__, type(anthropic.__spec__.loader).__name__)
        print("pending:", pending_sdks(), "active:", active_patchers())
        c = openai.OpenAI(base_url=sys.argv[1], api_key="k", max_retries=0)
        c.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
        a = anthropic.Anthropic(api_key="k", base_url=sys.argv[2], max_retries=0)
        a.messages.create(model="claude-3-5-sonnet-20240620", max_tokens=1024, messages=MESSAGES)
        spans = exporter.get_finished_spans()
        print("spans:", sorted(s.attributes["gen_ai.provider.name"] for s in spans))
        """,
        oa.base_url,
        an.origin,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    # The framework integrations (OpenAI Agents SDK, LangChain, MCP) and the other model SDKs
    # (Bedrock through botocore, Gemini, Mistral, Cohere, LiteLLM) wait for their own imports.
    mistral = patcher_mod.mistral_sdk_module()  # a namespace from mistralai 2.0 on
    waiting = (
        "agents",
        "botocore",
        "cohere",
        "google.genai",
        "langchain_core",
        "litellm",
        "mcp",
        mistral,
    )
    frameworks = tuple(sorted(m for m in waiting if patcher_mod.sdk_importable(m)))
    assert lines[0] == f"pending: {tuple(sorted(('anthropic', 'openai', *frameworks)))} active: ()"
    assert lines[1] == "loader: SourceFileLoader SourceFileLoader"
    assert lines[2] == f"pending: {frameworks} active: ('openai', 'anthropic')"
    assert lines[3] == "spans: ['anthropic', 'openai']"
    assert not oa.unmatched
    assert not an.unmatched


def test_uninstrument_removes_pending_hooks(servers: tuple[ReplayServer, ReplayServer]) -> None:
    """After ``uninstrument()`` no finder of ours is left on ``sys.meta_path`` and an SDK
    imported later is left untouched: a call gives no span."""
    oa, _ = servers
    proc = _run_child(
        """
        n_finders = len(sys.meta_path)
        tracejudge.instrument(tracer_provider=provider)
        tracejudge.instrument(tracer_provider=provider)  # idempotent: still one finder
        print("finders added:", len(sys.meta_path) - n_finders)
        tracejudge.uninstrument()
        print("finders left:", len(sys.meta_path) - n_finders, "pending:", pending_sdks())
        import openai
        c = openai.OpenAI(base_url=sys.argv[1], api_key="k", max_retries=0)
        c.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
        print("spans:", len(exporter.get_finished_spans()), "active:", active_patchers())
        """,
        oa.base_url,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "finders added: 1",
        "finders left: 0 pending: ()",
        "spans: 0 active: ()",
    ]


def _write_module(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / f"{name}.py").write_text("VALUE = 41\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.fixture
def fresh_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The name of an importable, not yet imported module (removed again afterwards)."""
    name = f"tj_hook_target_{tmp_path.name.replace('-', '_')}"
    _write_module(tmp_path, name, monkeypatch)
    yield name
    sys.modules.pop(name, None)


def test_hook_runs_once_after_the_module_executed(fresh_module: str) -> None:
    """The callback sees the fully executed module, exactly once, and the finder leaves
    ``sys.meta_path`` once nothing is pending."""
    hooks = ImportHooks()
    seen: list[Any] = []
    hooks.when_imported(fresh_module, lambda m: seen.append(getattr(m, "VALUE", None)))
    assert hooks.pending() == (fresh_module,)
    module = __import__(fresh_module)
    assert seen == [41]
    assert module.__loader__.__class__.__name__ == "SourceFileLoader"
    assert hooks.pending() == ()
    assert not any(isinstance(f, _Finder) for f in sys.meta_path)


def test_failing_callback_never_breaks_the_import(
    fresh_module: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A callback that raises is logged as a warning naming the module; the
    application's import still succeeds."""
    hooks = ImportHooks()

    def boom(module: ModuleType) -> None:
        raise RuntimeError("patch exploded")

    hooks.when_imported(fresh_module, boom)
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        module = __import__(fresh_module)
    assert module.VALUE == 41
    assert any(fresh_module in r.getMessage() for r in caplog.records)
    assert hooks.pending() == ()


def test_cancel_all_removes_the_finder(fresh_module: str) -> None:
    """``cancel_all()`` forgets callbacks: importing afterwards calls nothing."""
    hooks = ImportHooks()
    seen: list[ModuleType] = []
    hooks.when_imported(fresh_module, seen.append)
    hooks.cancel_all()
    assert not any(isinstance(f, _Finder) for f in sys.meta_path)
    __import__(fresh_module)
    assert seen == []


def test_a_submodule_is_watched_by_its_dotted_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SDK that lives in a shared namespace (``google.genai``) is watched as the
    submodule: importing the package alone calls nothing, importing the submodule calls
    back once with it."""
    package = f"tj_hook_pkg_{tmp_path.name.replace('-', '_')}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / package / "sdk.py").write_text("VALUE = 7\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    hooks = ImportHooks()
    seen: list[Any] = []
    hooks.when_imported(f"{package}.sdk", lambda m: seen.append(getattr(m, "VALUE", None)))
    try:
        importlib.import_module(package)
        assert seen == []
        importlib.import_module(f"{package}.sdk")
        assert seen == [7]
        assert hooks.pending() == ()
    finally:
        hooks.cancel_all()
        sys.modules.pop(f"{package}.sdk", None)
        sys.modules.pop(package, None)


class _Plugin:
    """A registered patcher for the throwaway module; ``fail`` makes ``patch`` raise."""

    fail = False
    patched = 0

    name = "plugin-sdk"

    def available(self) -> bool:
        return True

    def patch(self, runtime: Any) -> None:
        if _Plugin.fail:
            raise AttributeError("plugin moved its methods")
        _Plugin.patched += 1

    def unpatch(self) -> None:
        return None


@pytest.fixture
def plugin(fresh_module: str) -> Iterator[str]:
    """``_Plugin`` registered for ``fresh_module``; unregistered and uninstrumented after."""
    _Plugin.fail, _Plugin.patched = False, 0
    patcher_mod.register_patcher("plugin-sdk", _Plugin, sdk_module=fresh_module)
    patcher_mod.reset_warnings()
    yield fresh_module
    tracejudge.uninstrument()
    patcher_mod.unregister_patcher("plugin-sdk")
    patcher_mod.reset_warnings()


def test_registered_patcher_is_deferred_until_import(
    plugin: str, tracer_provider: TracerProvider
) -> None:
    """A patcher registered with ``sdk_module`` is pending after ``instrument()`` and
    applied once on import; a second ``instrument()`` before the import does not apply
    it twice."""
    tracejudge.instrument(tracer_provider=tracer_provider)
    tracejudge.instrument(tracer_provider=tracer_provider)
    assert plugin in pending_sdks()
    assert "plugin-sdk" not in active_patchers()
    __import__(plugin)
    assert _Plugin.patched == 1
    assert "plugin-sdk" in active_patchers()
    assert plugin not in pending_sdks()


def test_patch_failing_on_import_warns_and_import_succeeds(
    plugin: str, tracer_provider: TracerProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """A patcher whose ``patch`` raises inside the hook is skipped with one warning; the
    application's import of the SDK works."""
    _Plugin.fail = True
    tracejudge.instrument(tracer_provider=tracer_provider)
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        module = __import__(plugin)
    assert module.VALUE == 41
    assert "plugin-sdk" not in active_patchers()
    assert any("could not be patched" in r.getMessage() for r in caplog.records)


def test_uninstrument_before_import_means_never_patched(
    plugin: str, tracer_provider: TracerProvider
) -> None:
    """``uninstrument()`` between ``instrument()`` and the import cancels the patch."""
    tracejudge.instrument(tracer_provider=tracer_provider)
    tracejudge.uninstrument()
    __import__(plugin)
    assert _Plugin.patched == 0
    assert pending_sdks() == ()
