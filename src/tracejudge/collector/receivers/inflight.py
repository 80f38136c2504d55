"""The in-flight request budget (``max_inflight_request_bytes``), shared by the receivers."""

from __future__ import annotations

import asyncio

__all__ = ["BodyCharge", "InflightBytes"]


class InflightBytes:
    """Request bodies being read at once, in bytes (``max_inflight_request_bytes``), over
    both receivers.

    Under a burst, hundreds of bodies of up to ``max_request_bytes`` can be arriving at the
    same time, and they were the largest part of peak memory (docs/collector.md, Memory).
    An OTLP/HTTP request is charged the bytes of its body as they arrive (``BodyCharge``),
    not the Content-Length it announces: eight connections announcing 4 MiB and sending
    a byte now and then held the whole 32 MiB and every other client got 503. Past the
    limit it is answered 503 + Retry-After (and its connection closed, as the rest of its
    body may still come). A gRPC call's size is unknown until its message is read, so it
    reserves ``max_request_bytes``, waits a moment for room when there is none (the read
    takes milliseconds), and keeps only its message's size once read. One request is
    always let in, whatever its size."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.nbytes = 0
        self.refused = 0
        self._waiters: list[asyncio.Future[None]] = []

    def _fits(self, n: int, held: int = 0) -> bool:
        return self.nbytes == held or self.nbytes + n <= self.limit

    def reserve(self, n: int, held: int = 0) -> bool:
        """Take ``n`` bytes of the budget; False (nothing taken) when they do not fit.
        ``held``: what the same request holds already (alone, it may always grow)."""
        if not self._fits(n, held):
            self.refused += 1
            return False
        self.nbytes += n
        return True

    async def reserve_waiting(self, n: int, timeout: float) -> bool:
        """``reserve``, waiting up to ``timeout`` seconds for room; False when none came."""
        if self._fits(n):
            self.nbytes += n
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (remaining := deadline - loop.time()) > 0:
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                await asyncio.wait_for(waiter, remaining)
            except TimeoutError:
                pass
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
            if self._fits(n):
                self.nbytes += n
                return True
        self.refused += 1
        return False

    @property
    def waiting(self) -> int:
        """Calls waiting for room (``reserve_waiting``) now."""
        return len(self._waiters)

    def release(self, n: int) -> None:
        """Give back ``n`` of what ``reserve`` took; wakes the calls waiting for room."""
        self.nbytes -= n
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


class BodyCharge:
    """One request body's share of an ``InflightBytes``, grown as its bytes arrive."""

    def __init__(self, budget: InflightBytes) -> None:
        self.budget = budget
        self.held = 0

    def grow_to(self, n: int) -> bool:
        """Hold ``n`` bytes in all (more than before); False (nothing more taken) when the
        budget has no room for them."""
        more = n - self.held
        if more <= 0:
            return True
        if not self.budget.reserve(more, self.held):
            return False
        self.held = n
        return True

    def release(self) -> None:
        """Give back everything held."""
        if self.held:
            self.budget.release(self.held)
            self.held = 0
