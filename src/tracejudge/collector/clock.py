"""The collector's clock, injectable so decision timing is tested without sleeps.

Decision deadlines (``decision_wait_after_root``, ``decision_wait``), the judge's lag and
the timer's next wake are computed from ``Clock.now()``, and the timer (the hold's,
``TraceHold.run_timer``) sleeps with ``Clock.call_at``; the gate's window uses
``Clock.wall()``. The default reads the real clocks and sleeps on the event loop; a test
passes a ``ManualClock`` to ``Collector`` and moves time with ``advance`` (the collector's
timer wakes when the clock passes its deadline, on its own loop), or drives a ``DecisionStage``
step by step (``DecisionStage.arm_timer`` then ``DecisionStage.tick``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

T = TypeVar("T")


class Timer(Protocol):
    """A callback scheduled with ``Clock.call_later``."""

    def cancel(self) -> None:
        """Do not run it (no effect once it ran)."""
        ...


class Clock(Protocol):
    """Two readings: a monotonic one for waits and a wall one for timestamps."""

    def now(self) -> float:
        """Monotonic seconds (only differences mean anything)."""
        ...

    def wall(self) -> float:
        """Seconds since the Unix epoch."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` on the running event loop once ``now()`` has moved ``delay``
        seconds on. Called on that loop."""
        ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` on the running event loop once ``now()`` reaches ``when`` (at
        once when it has): a deadline computed from an earlier reading stays that deadline
        however the clock moved since. Called on that loop."""
        ...


class SystemClock:
    """The real clocks. ``now`` is ``time.monotonic``, the clock asyncio's default loop
    uses, so a delay computed from it can be handed to ``loop.call_later`` as is."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(delay, callback)

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(when - self.now(), callback)


class _ManualTimer:
    """One ``ManualClock.call_later``: its deadline, loop and callback."""

    def __init__(
        self, when: float, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]
    ) -> None:
        self.when = when
        self.loop = loop
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only when told (``advance``): for tests and simulations.

    ``advance`` may be called from any thread (a test thread driving a collector whose loop
    runs in another): the timers it makes due run on the loop that scheduled them."""

    def __init__(self, start: float = 1000.0, wall_start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._offset = wall_start - start
        self._lock = threading.Lock()
        self._timers: list[_ManualTimer] = []

    def now(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._now + self._offset

    def advance(self, seconds: float) -> None:
        """Move both readings forward by ``seconds`` (never backward)."""
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds})")
        with self._lock:
            self._now += seconds
            due = [t for t in self._timers if t.when <= self._now]
            self._timers = [t for t in self._timers if t.when > self._now and not t.cancelled]
        for t in sorted(due, key=lambda t: t.when):
            if not t.cancelled:
                t.loop.call_soon_threadsafe(self._fire, t)

    @staticmethod
    def _fire(timer: _ManualTimer) -> None:
        if not timer.cancelled:
            timer.callback()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return self.call_at(self._now + delay, callback)

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer(when, asyncio.get_running_loop(), callback)
        with self._lock:  # read with the list, so an advance in between cannot skip it
            if when > self._now:
                self._timers.append(timer)
                return timer
        timer.loop.call_soon(self._fire, timer)  # already due, as the loop's own would run
        return timer

    def deadlines(self) -> list[float]:
        """When each timer scheduled and not yet due or cancelled will run (sorted): a
        test waits until the code under test has armed the deadline it means to pass."""
        with self._lock:
            return sorted(t.when for t in self._timers if not t.cancelled)


async def within(clock: Clock, seconds: float, aw: Awaitable[T]) -> T:
    """``asyncio.wait_for`` on ``clock``: ``aw``'s result, or ``TimeoutError`` (``aw``
    cancelled) once ``clock`` has moved ``seconds`` on."""
    task = asyncio.ensure_future(aw)
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    timer = clock.call_later(seconds, expire)
    try:
        return await task
    except asyncio.CancelledError:
        if expired:
            raise TimeoutError from None
        raise
    finally:
        timer.cancel()
