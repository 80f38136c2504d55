"""The collector's injectable clock: ``ManualClock`` timers and ``within`` (what the decision
timer and the receivers' deadlines run on in tests)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.collector.collector_support import LoopThread
from tests.support.guards import WAIT_S, wait_for
from tracejudge.collector.clock import ManualClock, SystemClock, within


def test_a_manual_timer_runs_on_its_loop_once_the_clock_passes_its_deadline(
    lt: LoopThread,
) -> None:
    """Scheduled on the loop, fired by ``advance`` from the test thread, run on the loop;
    a cancelled one never runs; ``deadlines`` shows what waits."""
    clock = ManualClock()
    ran: list[tuple[str, threading.Thread]] = []

    async def schedule() -> None:
        clock.call_later(0.5, lambda: ran.append(("a", threading.current_thread())))
        clock.call_later(0.2, lambda: ran.append(("b", threading.current_thread())))
        clock.call_later(0.3, lambda: ran.append(("c", threading.current_thread()))).cancel()

    lt.run(schedule())
    assert clock.deadlines() == [clock.now() + 0.2, clock.now() + 0.5]
    clock.advance(0.25)
    wait_for(lambda: len(ran) == 1, what="the 0.2 s timer")
    assert clock.deadlines() == [clock.now() + 0.25]
    clock.advance(0.25)
    wait_for(lambda: len(ran) == 2, what="the 0.5 s timer")
    assert [name for name, _ in ran] == ["b", "a"]
    assert all(thread is not threading.current_thread() for _, thread in ran)
    assert clock.deadlines() == []
    with pytest.raises(ValueError, match="does not go back"):
        clock.advance(-1)


def test_within_times_out_on_the_clock_and_passes_results_through(lt: LoopThread) -> None:
    """``within`` is ``asyncio.wait_for`` on a ``Clock``: a result in time comes back; an
    awaitable still running when the clock passes the deadline is cancelled and the caller
    gets ``TimeoutError``."""
    clock = ManualClock()

    async def value() -> int:
        return 7

    assert lt.run(within(clock, 1.0, value())) == 7
    assert lt.run(within(SystemClock(), WAIT_S, value())) == 7
    never = asyncio.Event()
    pending = asyncio.run_coroutine_threadsafe(within(clock, 1.0, never.wait()), lt.loop)
    wait_for(lambda: clock.deadlines() == [clock.now() + 1.0], what="the deadline armed")
    clock.advance(0.9)
    assert not pending.done()
    clock.advance(0.2)
    with pytest.raises(TimeoutError):
        pending.result(WAIT_S)
