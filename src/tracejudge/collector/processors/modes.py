"""How judged spans travel, gathered in one place per mode.

Two choices shape every path a span takes out of the collector:

- *When* spans are forwarded (``ForwardMode``): ``StampMode`` holds a trace until it is
  decided and stamps the verdict onto its own spans (the default); ``PassthroughMode``
  forwards every span on arrival, untouched, and sends the verdict later as a span of its
  own (``--passthrough``: no added latency, at the price of a verdict span per run).
- *What* content leaves (``ContentFilter``): ``--drop-content`` strips message and tool
  content, ``--redact-attributes`` scrubs secrets from string attributes; both apply to
  every fragment forwarded, whichever the mode.

The pipeline asks the mode at each of the four moments that differ (a fragment arrives,
a trace is decided, a late span arrives, a decision fails) and never tests a flag itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from tracejudge.collector.codec.otlp import frame
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.exporters.payload import Piece
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.collector.processors.stamp import (
    Decision,
    drop_content,
    mark_error,
    stamp,
    stamp_late,
    verdict_span,
)
from tracejudge.engine.verdict import Verdict


class ContentFilter:
    """``drop_content`` and ``redact_attributes`` on fragments about to be forwarded."""

    def __init__(self, drop: bool, redact: bool, scrubber: Scrubber) -> None:
        self.drop = drop
        self.redact = redact
        self.scrubber = scrubber
        self.active = drop or redact
        """False when fragments leave as they came (raw bytes can be forwarded as is)."""

    def apply(self, rs: ResourceSpans) -> bool:
        """Filter ``rs`` in place; True if it changed."""
        changed = False
        if self.drop:
            changed = drop_content(rs)
        if self.redact:
            changed = self.scrubber.fragment(rs) or changed
        return changed


def _spans(rs: ResourceSpans) -> int:
    n = 0
    for ss in rs.scope_spans:
        n += len(ss.spans)
    return n


class ForwardMode(Protocol):
    """When a trace's spans are forwarded and how its verdict reaches the backend."""

    content: ContentFilter

    def on_arrival(self, data: bytes) -> bytes | None:
        """The framed payload to forward as soon as a fresh fragment arrives, or None
        (the fragment waits for its trace's decision)."""
        ...

    def decided(
        self, raw: Sequence[bytes], fragments: list[ResourceSpans], verdicts: Sequence[Verdict]
    ) -> tuple[list[Piece], Decision]:
        """What a decided trace sends (``raw``: its serialized fragments, ``fragments``
        the same parsed) and the decision its late spans will get."""
        ...

    def late(self, data: bytes, decision: Decision) -> bytes:
        """The framed payload for a span that arrived after its trace was decided."""
        ...

    def failed(self, rs: ResourceSpans, message: str) -> tuple[Piece | None, str]:
        """A fragment of a trace whose decision failed: what to forward (None: nothing)
        and the root span id marked with the error ("" when none was)."""
        ...

    @property
    def forwards_on_arrival(self) -> bool:
        """True when spans already left on arrival (nothing of a trace is held back)."""
        ...


class StampMode:
    """Hold each trace until decided; stamp verdicts onto its root and cited spans."""

    forwards_on_arrival = False

    def __init__(self, content: ContentFilter) -> None:
        self.content = content

    def on_arrival(self, data: bytes) -> bytes | None:
        return None

    def decided(
        self, raw: Sequence[bytes], fragments: list[ResourceSpans], verdicts: Sequence[Verdict]
    ) -> tuple[list[Piece], Decision]:
        changed, decision = stamp(fragments, verdicts)
        if len(raw) != len(fragments):
            raise ValueError("decided: raw and parsed fragments differ in number")
        content = self.content if self.content.active else None
        pieces: list[Piece] = []
        for i, rs in enumerate(fragments):
            if content is not None and content.apply(rs):
                changed.add(i)
            data = rs.SerializeToString() if i in changed else raw[i]
            pieces.append(Piece(frame(data), _spans(rs)))
        return pieces, decision

    def late(self, data: bytes, decision: Decision) -> bytes:
        rs = ResourceSpans.FromString(data)
        stamp_late(rs, decision)
        self.content.apply(rs)
        return frame(rs.SerializeToString())

    def failed(self, rs: ResourceSpans, message: str) -> tuple[Piece | None, str]:
        root_id = mark_error(rs, message)
        self.content.apply(rs)
        return Piece(frame(rs.SerializeToString()), _spans(rs)), root_id


class PassthroughMode:
    """Forward every span on arrival, untouched by judging; each verdict follows as a span
    of its own (late spans, too, leave unstamped)."""

    forwards_on_arrival = True

    def __init__(self, content: ContentFilter) -> None:
        self.content = content

    def on_arrival(self, data: bytes) -> bytes | None:
        # Content is dropped or redacted on the way out; the buffered copy keeps it for
        # the judge.
        if not self.content.active:
            return frame(data)
        return self.late(data, Decision(verdict="pass"))

    def decided(
        self, raw: Sequence[bytes], fragments: list[ResourceSpans], verdicts: Sequence[Verdict]
    ) -> tuple[list[Piece], Decision]:
        pieces: list[Piece] = []
        for v in verdicts:
            extra = verdict_span(fragments[0], v)
            if extra is not None:
                pieces.append(Piece(frame(extra.SerializeToString()), 0))
        return pieces, Decision(verdict="pass")

    def late(self, data: bytes, decision: Decision) -> bytes:
        rs = ResourceSpans.FromString(data)
        self.content.apply(rs)
        return frame(rs.SerializeToString())

    def failed(self, rs: ResourceSpans, message: str) -> tuple[Piece | None, str]:
        return None, ""  # its spans were forwarded on arrival


def forward_mode(config: CollectorConfig, scrubber: Scrubber) -> ForwardMode:
    """The mode ``config`` asks for (the one place ``passthrough`` and the content flags
    are read)."""
    content = ContentFilter(config.drop_content, config.redact_attributes, scrubber)
    if config.passthrough:
        return PassthroughMode(content)
    return StampMode(content)
