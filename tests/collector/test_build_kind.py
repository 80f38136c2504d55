"""Which build runs: the test command checks both the pure-Python and the compiled build."""

from __future__ import annotations

from collections.abc import Callable
from importlib.machinery import EXTENSION_SUFFIXES

from tracejudge._build import build_kind, compiled
from tracejudge.collector import Collector
from tracejudge.collector.processors import stamp as stamp_module
from tracejudge.engine import engine as engine_module
from tracejudge.model import steps as steps_module


def test_build_is_the_one_this_run_expects(expect_compiled: bool) -> None:
    """The compiled run really runs compiled modules (a silent pure fallback would make its
    tests prove nothing), and the editable run has no stale extension shadowing a source."""
    assert compiled() is expect_compiled
    for module in (steps_module, engine_module, stamp_module):
        assert (module.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES)) is expect_compiled


def test_metrics_report_the_build(
    collector_factory: Callable[..., Collector], expect_compiled: bool
) -> None:
    """``/metrics`` says which build serves, for sizing (the two differ in throughput)."""
    snap = collector_factory().snapshot()
    assert snap["build"] == build_kind() == ("compiled" if expect_compiled else "pure-python")
