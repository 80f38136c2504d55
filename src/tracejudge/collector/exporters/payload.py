"""The typed payloads that travel from decisions to the forward queues.

Both are built for every decided trace (a piece per fragment, a payload per forward
request), so their ``__init__`` is written out (``init=False``): the compiled build makes
a written one native code, several times cheaper than the one ``dataclass`` generates
(``model/spans.py`` says more). Their parameters are the fields, in order, with the same
defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracejudge.model.spans import reduce_by_fields


@dataclass(slots=True, init=False)
class Piece:
    """One framed ``ResourceSpans`` of a decided trace, with its span count (0 for an
    added verdict span, which is not a span the client sent)."""

    data: bytes
    spans: int

    def __init__(self, data: bytes, spans: int) -> None:
        self.data = data
        self.spans = spans

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return reduce_by_fields(self)


@dataclass(slots=True, init=False)
class Payload:
    """What goes to every forward queue as one ``Item``: framed bytes, the client spans
    and finished traces (0 or 1) they carry, and when they may be sent (``None``: now;
    a decided trace's moment of decision, for the latency figure)."""

    data: bytes
    spans: int
    traces: int
    ready_at: float | None = None

    def __init__(self, data: bytes, spans: int, traces: int, ready_at: float | None = None) -> None:
        self.data = data
        self.spans = spans
        self.traces = traces
        self.ready_at = ready_at

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return reduce_by_fields(self)
