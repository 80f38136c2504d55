"""The graders' budget in ``tracejudge serve``: model calls in any minute of the collector's
clock, shared by every grader thread (``grader_calls_per_minute``).

A call over it is not made; its sample is ``not_evaluated`` with the reason ``budget``
(``processors/graders.py``). The minute is read from the collector's ``Clock``, so a test
moves it with a ``ManualClock`` instead of waiting.
"""

from __future__ import annotations

import collections
import threading

from tracejudge.collector.clock import Clock

WINDOW_S = 60.0
"""The span of ``grader_calls_per_minute``."""


class CallBudget:
    """Model calls allowed in any ``WINDOW_S`` of ``clock``, shared by every grader thread."""

    def __init__(self, clock: Clock, per_minute: int) -> None:
        self.clock = clock
        self.per_minute = per_minute
        self._calls: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Take one call now; False when the window's calls are spent."""
        with self._lock:
            now = self.clock.now()
            while self._calls and self._calls[0] <= now - WINDOW_S:
                self._calls.popleft()
            if len(self._calls) >= self.per_minute:
                return False
            self._calls.append(now)
            return True
