"""The one exception every decoder raises for malformed input.

Callers (the collector's receivers, ``tracejudge eval``) catch a single type and can show
the user exactly where the input went wrong, e.g.
``resourceSpans[0].scopeSpans[1].spans[3].traceId: not 32 hex chars``.
"""

from __future__ import annotations


class OtlpDecodeError(ValueError):
    """Malformed OTLP input. ``path`` locates the bad field; ``reason`` says what is wrong."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path else reason)
