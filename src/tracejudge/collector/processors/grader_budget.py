"""The graders' budgets in ``tracejudge serve``, in any minute of the collector's clock and
shared by every grader thread: model calls (``grader_calls_per_minute``) and the tokens
those calls used (``grader_tokens_per_minute``, off at 0). A run's calls (its graders'
samples) are taken from the call budget when it is settled, all or none, before any work is
done for it; a run refused is never rebuilt or rendered.

A call over either is not made; its sample is ``not_evaluated`` with the reason ``budget``
(``processors/graders.py``). A call's tokens are known only once it has answered (the
provider reports them), so the token budget admits a call while the last minute's calls
used fewer tokens than the budget: calls already open when it is reached may take it over
by what they use (at most ``grader_max_concurrent`` calls). The minute is read from the
collector's ``Clock``, so a test moves it with a ``ManualClock`` instead of waiting.
"""

from __future__ import annotations

import collections
import threading

from tracejudge.collector.clock import Clock

WINDOW_S = 60.0
"""The span of ``grader_calls_per_minute`` and ``grader_tokens_per_minute``."""


class CallBudget:
    """Model calls allowed in any ``WINDOW_S`` of ``clock``, shared by every grader thread."""

    def __init__(self, clock: Clock, per_minute: int) -> None:
        self.clock = clock
        self.per_minute = per_minute
        self._calls: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        while self._calls and self._calls[0] <= now - WINDOW_S:
            self._calls.popleft()

    def take(self, n: int = 1) -> bool:
        """Take ``n`` calls now, all or none; False when fewer are left in the window."""
        with self._lock:
            now = self.clock.now()
            self._expire(now)
            if len(self._calls) + n > self.per_minute:
                return False
            self._calls.extend([now] * n)
            return True


class TokenBudget:
    """Tokens grader calls used in any ``WINDOW_S`` of ``clock``, against ``per_minute``
    (0: no budget, only counted)."""

    def __init__(self, clock: Clock, per_minute: int) -> None:
        self.clock = clock
        self.per_minute = per_minute
        self.total = 0
        """Tokens reported since the start."""
        self._used: collections.deque[tuple[float, int]] = collections.deque()
        self._in_window = 0
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        while self._used and self._used[0][0] <= now - WINDOW_S:
            self._in_window -= self._used.popleft()[1]

    def spent(self) -> bool:
        """Whether the last ``WINDOW_S`` used the whole budget (never without one)."""
        if self.per_minute <= 0:
            return False
        with self._lock:
            self._expire(self.clock.now())
            return self._in_window >= self.per_minute

    def add(self, tokens: int) -> None:
        """A call that answered now used ``tokens``."""
        with self._lock:
            self.total += tokens
            if tokens > 0:
                self._used.append((self.clock.now(), tokens))
                self._in_window += tokens

    def last_minute(self) -> int:
        """Tokens the calls that answered in the last ``WINDOW_S`` used."""
        with self._lock:
            self._expire(self.clock.now())
            return self._in_window
