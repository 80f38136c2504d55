"""The collector's clock, injectable so decision timing is tested without sleeps.

Decision deadlines (``decision_wait_after_root``, ``decision_wait``) and the timer's next
wake are computed from ``Clock.now()``; the gate's window uses ``Clock.wall()``. The
default reads the real clocks; a test passes a clock it advances by hand and drives the
pipeline's timer step by step (``Pipeline.arm_timer`` then ``Pipeline.tick``).
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Two readings: a monotonic one for waits and a wall one for timestamps."""

    def now(self) -> float:
        """Monotonic seconds (only differences mean anything)."""
        ...

    def wall(self) -> float:
        """Seconds since the Unix epoch."""
        ...


class SystemClock:
    """The real clocks. ``now`` is ``time.monotonic``, the clock asyncio's default loop
    uses, so a delay computed from it can be handed to ``loop.call_later`` as is."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when told (``advance``): for tests and simulations."""

    def __init__(self, start: float = 1000.0, wall_start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._offset = wall_start - start

    def now(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._now + self._offset

    def advance(self, seconds: float) -> None:
        """Move both readings forward by ``seconds`` (never backward)."""
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds})")
        self._now += seconds
