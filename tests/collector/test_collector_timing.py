"""When decisions happen, on a manual clock: no sockets, no sleeps, exact times.

The pipeline reads deadlines from its injected ``Clock``; ``drive`` below plays the
collector's timer loop (``TraceHold.run_timer``: sleep what ``DecisionStage.arm_timer`` says,
cut short when ingest sets ``wake``, then ``tick``) with the manual clock's time instead of
the event loop's. The judge is the stand-in (rule semantics do not matter here) and the
verdict sink is a list: a decision is the moment its record reaches the sink.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from tests.collector.collector_support import (
    StandInJudge,
    decision_stage,
    make_request,
    make_span,
    new_ids,
)
from tracejudge.collector import CollectorConfig
from tracejudge.collector.assembly import admission_for
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.processors.admission import Admission
from tracejudge.collector.processors.decision import DecisionStage
from tracejudge.collector.telemetry.stats import Stats


class ListSink:
    """A verdict sink that keeps each record with the (manual) time it arrived."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.records: list[tuple[float, dict[str, Any]]] = []

    def emit(self, records: Sequence[dict[str, Any]]) -> None:
        self.records.extend((self.clock.now(), r) for r in records)

    async def close(self) -> None:
        return None


def _pipeline(clock: ManualClock, **overrides: Any) -> tuple[DecisionStage, Admission, ListSink]:
    cfg = CollectorConfig(**{"forward": [], "grpc_port": 0, "http_port": 0, **overrides})
    sink = ListSink(clock)
    p = decision_stage(cfg.validate(), StandInJudge(), [], [sink], Stats([]), None, clock)
    p.arm_timer()
    return p, admission_for(cfg, p), sink


async def drive(p: DecisionStage, clock: ManualClock, seconds: float) -> None:
    """Run the collector's timer for ``seconds`` of manual time."""
    end = clock.now() + seconds
    while True:
        if p.wake.is_set():  # ingest asked for an earlier wake: the loop wakes now
            pass
        elif p.wake_at <= end:
            clock.advance(max(0.0, p.wake_at - clock.now()))
        else:
            clock.advance(end - clock.now())
            return
        await p.tick()
        p.arm_timer()


def test_decision_follows_the_deadline_not_the_tick() -> None:
    """Decision latency beyond the wait must not grow with the tick: with a 1 s tick and a
    0.1 s wait, back-to-back traces are each decided 0.1 s after their root. A timer that
    slept a whole tick between batches made the second trace wait ~1 s."""
    clock = ManualClock()
    p, entry, sink = _pipeline(clock, decision_wait_after_root=0.1, decision_wait=5.0, tick=1.0)

    async def go() -> list[float]:
        took = []
        for n in range(1, 4):
            trace_id, root_id = new_ids()
            start = clock.now()
            entry.ingest(make_request([make_span(trace_id, root_id)]))
            while len(sink.records) < n:
                await drive(p, clock, 0.01)
                assert clock.now() - start < 2.0, f"trace {n} not decided"
            took.append(sink.records[-1][0] - start)
        return took

    took = asyncio.run(go())
    assert took == [pytest.approx(0.1, abs=0.011)] * 3, took


def test_root_wait_restarts_with_each_span_and_a_rootless_trace_waits_the_maximum() -> None:
    """A span arriving after the root moves the decision to ``wait_after_root`` after it;
    a trace whose root never comes is decided ``decision_wait`` after its first span."""
    clock = ManualClock()
    p, entry, sink = _pipeline(clock, decision_wait_after_root=0.5, decision_wait=3.0, tick=0.25)
    trace_id, root_id = new_ids()
    orphan, _ = new_ids()

    async def go() -> None:
        t0 = clock.now()
        entry.ingest(make_request([make_span(trace_id, root_id)]))
        entry.ingest(make_request([make_span(orphan, parent=b"\x01" * 8)]))
        await drive(p, clock, 0.4)
        entry.ingest(make_request([make_span(trace_id, parent=root_id)]))  # at t0 + 0.4
        await drive(p, clock, 0.45)
        assert sink.records == []  # 0.85 s: the root's wait restarted at 0.4
        await drive(p, clock, 0.1)
        assert [r["trace_id"] for _, r in sink.records] == [trace_id.hex()]
        assert sink.records[0][0] - t0 == pytest.approx(0.9, abs=0.011)
        await drive(p, clock, 3.0)
        # The orphan has no root span, so no verdict: the decision is counted instead.
        assert p.stats.traces_decided == 2

    asyncio.run(go())
