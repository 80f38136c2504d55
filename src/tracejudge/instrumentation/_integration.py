"""The framework seam: one ``Integration`` per agent framework (Agents SDK, LangGraph, MCP).

Why a Protocol of its own, next to the model-provider template (``_provider``): a
framework is not traced by wrapping a request/response method. It is traced through
whatever the framework offers — a tracing-processor registry (OpenAI Agents SDK), a
callback system (langchain-core), a session hook (MCP) — and what it hands over (agent
runs, tool executions, handoffs) is mapped to GenAI spans. What every framework shares
is the lifecycle around that, which ``IntegrationPatcher`` writes once:

- ``module``: the framework's top-level import; ``instrument()`` installs the
  integration when the application imports it (never importing it itself).
- ``distribution`` and ``supported``: the installed version is checked against the
  range the integration was tested on; outside it, one warning names the version and
  the range, and the integration is still installed (the framework's public interface
  may well still work; if it does not, the next rule applies).
- ``install(runtime)``: register/patch; raise ``AttributeError``/``ImportError``/
  ``TypeError`` when the framework's interface moved — then ``uninstall()`` runs and
  one warning names the framework; the application and every other integration keep
  working. ``uninstall()`` must be exact and safe after a partial install or none.
- ``hooks``: what the integration patches or registers, by name (diagnostics, docs).

A framework that is not installed is the normal case, logged at debug level only.
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from tracejudge.instrumentation._patcher import sdk_importable, warn_once
from tracejudge.instrumentation._runtime import Runtime

_NUMBERS = re.compile(r"\d+(?:\.\d+)*")


def _release(version: str) -> tuple[int, ...] | None:
    """The numeric release of a version string (``0.24.0rc1`` → ``(0, 24, 0)``)."""
    match = _NUMBERS.match(version.strip().lstrip("vV"))
    if match is None:
        return None
    parts = tuple(int(p) for p in match.group(0).split("."))
    while len(parts) > 1 and parts[-1] == 0:  # 1.0.0 == 1.0 == 1
        parts = parts[:-1]
    return parts


@dataclass(frozen=True, slots=True)
class SupportedVersions:
    """The release range an integration was tested on: ``minimum <= v < below``."""

    minimum: str
    below: str

    def __post_init__(self) -> None:
        if _release(self.minimum) is None or _release(self.below) is None:
            raise ValueError(f"not a version range: {self.minimum!r}..{self.below!r}")

    def contains(self, version: str) -> bool:
        """Whether ``version`` lies in the range (an unparsable version does not)."""
        release = _release(version)
        low, high = _release(self.minimum), _release(self.below)
        if release is None or low is None or high is None:
            return False
        return low <= release < high

    def __str__(self) -> str:
        return f">={self.minimum},<{self.below}"


@runtime_checkable
class Integration(Protocol):
    """One framework integration (see the module docstring for each member; plain
    attributes satisfy the read-only members)."""

    @property
    def name(self) -> str: ...

    @property
    def distribution(self) -> str: ...

    @property
    def module(self) -> str: ...

    @property
    def supported(self) -> SupportedVersions: ...

    @property
    def hooks(self) -> tuple[str, ...]: ...

    def install(self, runtime: Runtime) -> None: ...

    def uninstall(self) -> None: ...


def installed_version(distribution: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


class IntegrationPatcher:
    """Adapts an ``Integration`` to the ``Patcher`` seam ``instrument()`` applies."""

    def __init__(self, integration: Integration) -> None:
        self.integration = integration
        self.name = integration.name

    def available(self) -> bool:
        """True when the framework is importable and its distribution installed (nothing
        is imported). A module of the same name from another distribution (``agents`` is
        a common name) is not the framework: it is left alone, without a warning."""
        integration = self.integration
        return (
            sdk_importable(integration.module)
            and installed_version(integration.distribution) is not None
        )

    def patch(self, runtime: Runtime) -> None:
        """Check the version (one warning outside the range), then install."""
        integration = self.integration
        version = installed_version(integration.distribution)
        if version is None or not integration.supported.contains(version):
            warn_once(
                f"{integration.name}:version",
                f"{integration.distribution} {version or '(version unknown)'} is outside the "
                f"range tracejudge supports ({integration.supported}); tracing it anyway, "
                "spans may be incomplete",
            )
        integration.install(runtime)

    def unpatch(self) -> None:
        """Undo ``install`` (exact; safe when nothing was installed)."""
        self.integration.uninstall()
