"""The in-flight request budget (``max_inflight_request_bytes``), shared by the receivers."""

from __future__ import annotations

__all__ = ["InflightBytes"]


class InflightBytes:
    """Request bodies being read at once, in bytes (``max_inflight_request_bytes``).

    Under a burst, hundreds of bodies of up to ``max_request_bytes`` can be arriving at the
    same time, and they were the largest part of peak memory (docs/performance.md). A
    request reserves its Content-Length (``max_request_bytes`` when chunked) before its
    body is read; past the limit it is answered 503 + Retry-After at once. One request
    is always let in, whatever its size."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.nbytes = 0
        self.refused = 0

    def reserve(self, n: int) -> bool:
        """Take ``n`` bytes of the budget; False (nothing taken) when they do not fit."""
        if self.nbytes and self.nbytes + n > self.limit:
            self.refused += 1
            return False
        self.nbytes += n
        return True

    def release(self, n: int) -> None:
        """Give back what ``reserve`` took."""
        self.nbytes -= n
