"""The framework seam: an ``Integration`` goes through ``instrument()`` like a patcher.

Why it matters: every framework (Agents SDK, LangGraph, MCP) relies on the same
guarantees — installed when the application imports the framework, a version outside
the tested range warned about once (naming it) and traced anyway, an interface that
moved skipped with one warning while everything else keeps working, a framework that is
not installed left alone quietly. The "framework" here is a throwaway module written to
``tmp_path`` (no real framework is needed to test the seam itself); the version check
reads the real metadata of an installed distribution (pytest's).
"""

from __future__ import annotations

import importlib.metadata
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from opentelemetry.sdk.trace import TracerProvider

import tracejudge
from tracejudge.instrumentation import (
    Integration,
    Runtime,
    SupportedVersions,
    active_patchers,
    pending_sdks,
    register_integration,
)
from tracejudge.instrumentation import _patcher as patcher_mod

PYTEST_VERSION = importlib.metadata.version("pytest")


class _Framework:
    """An integration of the throwaway module; class attributes steer and record it."""

    target: ClassVar[str] = ""
    dist: ClassVar[str] = "pytest"
    versions: ClassVar[SupportedVersions] = SupportedVersions("1", "100000")
    fail: ClassVar[bool] = False
    installed: ClassVar[list[Runtime]] = []
    uninstalled: ClassVar[int] = 0

    name = "toy-framework"
    hooks = ("toy.register_processor",)

    def __init__(self) -> None:
        self.module: str = _Framework.target
        self.distribution: str = _Framework.dist
        self.supported: SupportedVersions = _Framework.versions

    def install(self, runtime: Runtime) -> None:
        if _Framework.fail:
            raise AttributeError("toy.register_processor moved")
        _Framework.installed.append(runtime)

    def uninstall(self) -> None:
        _Framework.uninstalled += 1


@pytest.fixture
def framework(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A not-yet-imported module with ``_Framework`` registered for it."""
    name = f"tj_toy_framework_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("VALUE = 7\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    _Framework.target, _Framework.fail, _Framework.dist = name, False, "pytest"
    _Framework.versions = SupportedVersions("1", "100000")
    _Framework.installed, _Framework.uninstalled = [], 0
    register_integration(_Framework)
    patcher_mod.reset_warnings()
    yield name
    tracejudge.uninstrument()
    patcher_mod.unregister_patcher("toy-framework")
    patcher_mod.reset_warnings()
    sys.modules.pop(name, None)


def test_the_toy_satisfies_the_protocol() -> None:
    """The Protocol is what the registry relies on (runtime-checkable)."""
    assert isinstance(_Framework(), Integration)


def test_installed_when_the_framework_is_imported(
    framework: str, tracer_provider: TracerProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """Pending until the application imports the framework, installed once with the
    runtime ``instrument()`` built, no warning in the supported range; ``uninstrument()``
    uninstalls it."""
    with caplog.at_level(logging.DEBUG, logger="tracejudge.instrumentation"):
        tracejudge.instrument(tracer_provider=tracer_provider)
        assert framework in pending_sdks()
        assert _Framework.installed == []
        __import__(framework)
    assert len(_Framework.installed) == 1
    assert _Framework.installed[0].tracer_provider is tracer_provider
    assert "toy-framework" in active_patchers()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    tracejudge.uninstrument()
    assert _Framework.uninstalled == 1
    assert "toy-framework" not in active_patchers()


def test_version_outside_the_range_warns_once_and_still_installs(
    framework: str, tracer_provider: TracerProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """One warning naming the distribution, its version and the supported range; the
    integration is installed anyway, and a second ``instrument()`` does not warn again."""
    _Framework.versions = SupportedVersions("0.1", "0.2")
    __import__(framework)
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        tracejudge.instrument(tracer_provider=tracer_provider)
        tracejudge.instrument(tracer_provider=tracer_provider)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"tracejudge: pytest {PYTEST_VERSION} is outside the range tracejudge supports "
        "(>=0.1,<0.2); tracing it anyway, spans may be incomplete"
    ]
    assert len(_Framework.installed) == 2
    assert "toy-framework" in active_patchers()


def test_moved_interface_is_skipped_with_one_warning_and_openai_still_patched(
    framework: str, tracer_provider: TracerProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """``install`` raising (the framework's interface moved) uninstalls the partial
    install and warns once naming the framework; nothing is raised into the import and
    the other patchers stay applied."""
    import openai  # noqa: F401  (imported: patched at once)

    _Framework.fail = True
    with caplog.at_level(logging.WARNING, logger="tracejudge.instrumentation"):
        tracejudge.instrument(tracer_provider=tracer_provider)
        module = __import__(framework)
    assert module.VALUE == 7
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(messages) == 1
    assert "toy-framework SDK is installed but could not be patched" in messages[0]
    assert "toy.register_processor moved" in messages[0]
    assert _Framework.uninstalled == 1
    assert "toy-framework" not in active_patchers()
    assert "openai" in active_patchers()


def test_framework_not_installed_is_only_a_debug_message(
    tracer_provider: TracerProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """Most applications use no given framework: its absence is no warning."""
    _Framework.target = "tj_no_such_framework"
    register_integration(_Framework)
    patcher_mod.reset_warnings()
    try:
        with caplog.at_level(logging.DEBUG, logger="tracejudge.instrumentation"):
            tracejudge.instrument(tracer_provider=tracer_provider)
        records = [r for r in caplog.records if "toy-framework" in r.getMessage()]
        assert [r.levelno for r in records] == [logging.DEBUG]
        assert "toy-framework" not in active_patchers()
    finally:
        tracejudge.uninstrument()
        patcher_mod.unregister_patcher("toy-framework")
        patcher_mod.reset_warnings()


def test_a_same_named_module_of_another_distribution_is_left_alone(
    framework: str, tracer_provider: TracerProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """A module that has the framework's name but not its distribution (``agents`` is a
    common name) is not the framework: nothing is installed and nothing is warned."""
    _Framework.dist = "tj-no-such-distribution"
    with caplog.at_level(logging.DEBUG, logger="tracejudge.instrumentation"):
        tracejudge.instrument(tracer_provider=tracer_provider)
        __import__(framework)
    assert _Framework.installed == []
    assert "toy-framework" not in active_patchers()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    ("version", "inside"),
    [
        ("0.2.7", True),
        ("0.24.0", True),
        ("0.24.9rc1", True),
        ("0.25", False),
        ("0.25.0", False),
        ("0.2.6", False),
        ("1.0", False),
        ("garbage", False),
    ],
)
def test_supported_versions_compare_releases(version: str, inside: bool) -> None:
    """``minimum <= version < below`` on numeric releases (pre-release tags ignored,
    trailing zeros equal); an unparsable version is outside."""
    assert SupportedVersions("0.2.7", "0.25").contains(version) is inside


def test_a_bad_range_is_refused() -> None:
    """A typo in an integration's declared range fails at definition, not at runtime."""
    with pytest.raises(ValueError, match="not a version range"):
        SupportedVersions("x", "1")
