"""The typed payloads that travel from decisions to the forward queues."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Piece:
    """One framed ``ResourceSpans`` of a decided trace, with its span count (0 for an
    added verdict span, which is not a span the client sent)."""

    data: bytes
    spans: int


@dataclass(slots=True)
class Payload:
    """What goes to every forward queue as one ``Item``: framed bytes, the client spans
    and finished traces (0 or 1) they carry, and when they may be sent (``None``: now;
    a decided trace's moment of decision, for the latency figure)."""

    data: bytes
    spans: int
    traces: int
    ready_at: float | None = None
