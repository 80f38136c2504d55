"""Pytest fixtures that run real trace backends (see tests/e2e/backends.py).

- ``jaeger`` (session): one Jaeger v2, in-memory storage, on free 127.0.0.1 ports.
  Tests share it; keep them independent by using fresh random trace ids.
- ``otelcol_factory`` (function): ``otelcol_factory(config_text, ports=..., env=...)``
  starts an OpenTelemetry Collector and returns an OtelcolInstance; every collector
  it started is stopped at teardown.

When e2e tests are selected, missing binaries are built right after collection
(scripts/build-backends.sh, ~10 min cold on 2 idle cores) into
${TRACEJUDGE_CACHE_DIR:-~/.cache/tracejudge}/bin; later runs reuse them. ``make test``
starts that build in the background first and runs the e2e tests last (scripts/test.sh), so
there the build overlaps everything else.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from tests.e2e.backends import (
    DEFAULT_OTELCOL_PORTS,
    BackendError,
    JaegerInstance,
    OtelcolFactory,
    OtelcolInstance,
    locate_binary,
    start_jaeger,
    start_otelcol,
)
from tests.support.guards import WAIT_S

_E2E_DIR = Path(__file__).resolve().parent


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build missing backend binaries before any e2e test runs.

    A cold build takes minutes; done here it is not charged to the first test's
    pytest-timeout. A failure is only reported here: the fixtures raise it again
    where it matters, in the tests that need the backends.
    """
    if session.config.option.collectonly:
        return
    if not any(Path(str(item.path)).resolve().is_relative_to(_E2E_DIR) for item in session.items):
        return
    for name in ("jaeger", "otelcol", "prometheus"):
        try:
            locate_binary(name)
        except BackendError as exc:
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"e2e backends: {exc}", red=True)


@pytest.fixture(scope="session")
def jaeger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JaegerInstance]:
    """A Jaeger v2 (in-memory storage) for the whole session."""
    instance = start_jaeger(work_dir=tmp_path_factory.mktemp("jaeger"))
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture
def otelcol_factory(tmp_path: Path) -> Iterator[OtelcolFactory]:
    """Start collectors from config text; all of them are stopped after the test."""
    started: list[OtelcolInstance] = []

    def factory(
        config_text: str,
        *,
        ports: Sequence[str] = DEFAULT_OTELCOL_PORTS,
        env: Mapping[str, str] | None = None,
        ready_timeout: float = WAIT_S,
    ) -> OtelcolInstance:
        instance = start_otelcol(
            config_text,
            ports=ports,
            env=env,
            work_dir=tmp_path / "otelcol",
            ready_timeout=ready_timeout,
        )
        started.append(instance)
        return instance

    try:
        yield factory
    finally:
        for instance in reversed(started):
            instance.stop()
