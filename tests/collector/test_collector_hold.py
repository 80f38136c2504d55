"""The hold as a processor: it consumes admitted fragments, and its timer, on the clock,
hands due traces to the decision side.

Driven directly on a ``ManualClock`` with a decision side that records what it is handed
(no judging): when the timer wakes, what it hands over and what it leaves alone.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.collector.collector_support import make_request, make_span
from tests.support.guards import until
from tracejudge.collector import CollectorConfig
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.codec.otlp import TraceFragment, split_by_trace
from tracejudge.collector.component import ComponentStopped
from tracejudge.collector.processors.buffer import PendingTrace
from tracejudge.collector.processors.hold import TraceHold


class Decisions:
    """The decision side: room when ``room`` is set; records each hand-over."""

    def __init__(self) -> None:
        self.room = True
        self.handed: list[list[bytes]] = []
        self.asked = 0

    def has_room(self) -> bool:
        self.asked += 1
        return self.room

    async def consume(self, batch: list[PendingTrace]) -> None:
        self.handed.append([t.trace_id for t in batch])


def _hold(clock: ManualClock) -> TraceHold:
    cfg = CollectorConfig(
        forward=[],
        grpc_port=0,
        http_port=0,
        decision_wait_after_root=0.5,
        decision_wait=3.0,
        tick=1.0,
    ).validate()
    return TraceHold(cfg, clock)


def _fragments(*trace_ids: bytes) -> tuple[TraceFragment, ...]:
    """One root span per trace, split as admission splits a request."""
    return tuple(split_by_trace(make_request([make_span(t) for t in trace_ids])).fragments)


def test_the_processor_contract() -> None:
    """Built with its kind; ``start``/``shutdown`` idempotent; a batch's fragments are
    buffered at the batch's time; after ``shutdown`` a batch is refused, naming the hold,
    and nothing of it is kept; the snapshot's keys never change."""
    clock = ManualClock()
    hold = _hold(clock)
    assert hold.kind == "hold"
    keys = set(hold.snapshot())
    hold.start()
    hold.start()
    tid = os.urandom(16)
    hold.consume((_fragments(tid), 7.0))
    assert list(hold.buffer.traces) == [tid]
    assert hold.next_deadline() == 7.5  # its root arrived at 7.0: due 0.5 s later
    assert hold.snapshot()["buffered_traces"] == 1
    hold.shutdown()
    hold.shutdown()
    with pytest.raises(ComponentStopped, match="processor 'hold' is shut down"):
        hold.consume((_fragments(os.urandom(16)), 7.0))
    assert list(hold.buffer.traces) == [tid]
    assert set(hold.snapshot()) == keys


def test_due_traces_are_handed_on_only_while_the_decision_side_has_room() -> None:
    """Without room the due traces stay in the buffer, untouched; with room each due
    trace is handed over once, oldest deadline first, and the others stay."""
    clock = ManualClock()
    hold = _hold(clock)
    decisions = Decisions()
    first, second, later = os.urandom(16), os.urandom(16), os.urandom(16)
    hold.consume((_fragments(first), clock.now()))
    clock.advance(0.1)
    hold.consume((_fragments(second), clock.now()))
    clock.advance(0.5)
    hold.consume((_fragments(later), clock.now()))
    decisions.room = False
    asyncio.run(hold.hand_due(decisions))
    assert decisions.handed == []
    assert sorted(hold.buffer.traces) == sorted([first, second, later])
    decisions.room = True
    asyncio.run(hold.hand_due(decisions))
    assert decisions.handed == [[first, second]]
    assert list(hold.buffer.traces) == [later]


def test_the_timer_wakes_at_the_deadline_and_hands_the_trace_on() -> None:
    """The timer sleeps on the clock until the earliest deadline (a consumed fragment
    due before its wake pokes it), hands what is due to the decision side, and ends once
    ``stopping`` says so."""
    clock = ManualClock(0.0)
    hold = _hold(clock)
    decisions = Decisions()
    stop = False
    tid = os.urandom(16)

    async def go() -> None:
        nonlocal stop
        timer = asyncio.get_running_loop().create_task(hold.run_timer(decisions, lambda: stop))
        await until(lambda: clock.deadlines() == [1.0], "the timer armed a tick away")
        hold.consume((_fragments(tid), clock.now()))  # due at 0.5: before the tick
        await until(lambda: clock.deadlines() == [0.5], "the timer re-armed at the deadline")
        assert decisions.handed == [[]]  # the poke woke it: nothing was due yet
        clock.advance(0.5)
        await until(lambda: decisions.handed == [[], [tid]], "the trace handed on")
        assert hold.buffer.traces == {}
        stop = True
        hold.wake.set()
        await timer

    asyncio.run(go())
    assert decisions.asked == 2
