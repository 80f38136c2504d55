"""Fixtures for the collector tests: a loop thread, a sink backend, a started collector."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.collector.collector_support import LoopThread, Sink, config, start_collector
from tests.collector.judged_support import judged_collector
from tracejudge.collector import Collector
from tracejudge.collector.clock import Clock


@pytest.fixture
def lt() -> Iterator[LoopThread]:
    """An event loop running in a background thread."""
    loop = LoopThread()
    yield loop
    loop.close()


@pytest.fixture
def sink(lt: LoopThread) -> Iterator[Sink]:
    """A real OTLP receiver standing in for the trace backend."""
    s = Sink()
    lt.run(s.start())
    yield s
    lt.run(s.stop())


@pytest.fixture
def collector_factory(
    lt: LoopThread, sink: Sink, tmp_path: Path
) -> Iterator[Callable[..., Collector]]:
    """Start collectors (stand-in judge unless ``judge=`` is given, the real clocks unless
    ``clock=`` is); all stopped after."""
    started: list[Collector] = []

    def make(judge: Any = None, clock: Clock | None = None, **overrides: Any) -> Collector:
        c = start_collector(lt, config(sink, tmp_path, **overrides), judge, clock)
        started.append(c)
        return c

    yield make
    for c in started:
        lt.run(c.stop(timeout=2.0))


@pytest.fixture
def judged(collector_factory: Callable[..., Collector], tmp_path: Path) -> Collector:
    """A collector with the real engine, fed real instrumented runs (judged_support.py)."""
    return judged_collector(collector_factory, tmp_path)
