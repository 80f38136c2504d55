"""Deciding one trace: decode, judge, scrub and stamp it (or, when that fails, forward it
unjudged with an error verdict).

This is the CPU-bound part of a decision and the only part that runs on the judging
thread: it reads the trace and returns an ``Outcome`` without counting, remembering or
enqueueing anything, so an outcome can be thrown away (no room in a forward queue yet) and
the batch scheduler in ``decision.py`` stays the one place that touches shared state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from tracejudge.collector.codec.otlp import to_records
from tracejudge.collector.exporters.payload import Payload, Piece
from tracejudge.collector.processors.buffer import PendingTrace
from tracejudge.collector.processors.conversations import conversation_verdicts
from tracejudge.collector.processors.judge import Judge
from tracejudge.collector.processors.modes import ForwardMode
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.collector.processors.stamp import Decision
from tracejudge.collector.storage.durability import Durability
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.engine import JudgeTimeout
from tracejudge.engine.verdict import Verdict
from tracejudge.model.log_events import with_serialized_logs
from tracejudge.model.spans import SpanRecord

log = logging.getLogger("tracejudge.collector")

__all__ = ["Decider", "Outcome", "payloads_for"]

JudgeWithin = Callable[[Sequence[SpanRecord], float], list[Verdict]]
"""``Engine.judge_spans_within``: judging bounded in CPU seconds."""
_TIMEOUT = f"{JudgeTimeout.__name__}:"
"""How an error verdict of a run over ``max_judge_time`` begins."""


@dataclass(slots=True)
class Outcome:
    """A decided but not yet settled trace (see ``Decider.decide``)."""

    pieces: list[Piece]
    """Framed fragments with their span counts."""
    verdicts: list[Verdict]
    decision: Decision
    seconds: float = 0.0
    """CPU time the judge took on this trace (the rule-cost budget and adaptive judging
    are checked against it)."""
    timed_out: bool = False
    """Judging ran out of ``max_judge_time`` (a verdict says ``error``, with the reason)."""


class Decider:
    """Judges and stamps traces for the pipeline (``decide`` on the judging thread,
    ``failed`` on the loop)."""

    def __init__(
        self,
        judge: Judge,
        scrubber: Scrubber,
        mode: ForwardMode,
        durability: Durability,
        stats: Stats,
        max_judge_time: float | None = None,
        *,
        rules_version: str = "",
    ) -> None:
        self.judge = judge
        self.max_judge_time = max_judge_time or None
        """CPU seconds one trace may be judged for (None: no bound)."""
        within: JudgeWithin | None = getattr(judge, "judge_spans_within", None)
        self._within = within
        """The judge's bounded form, when it has one (the rules engine does)."""
        self.scrubber = scrubber
        self.mode = mode
        self.durability = durability
        self.stats = stats
        self.rules_version = rules_version
        """Stamped on verdicts that do not carry one (the rule set's version)."""

    def _judge(self, trace: PendingTrace, fragments: list[ResourceSpans]) -> list[Verdict]:
        try:
            records = to_records(fragments)
            if trace.logs:  # events that came as OTLP log records join their spans
                records = with_serialized_logs(records, trace.logs)
            limit = self.max_judge_time
            if limit is not None and self._within is not None:
                verdicts = self._within(records, limit)
            else:
                verdicts = self.judge.judge_spans(records)
        except Exception as exc:  # the judge must never take the collector down
            self.stats.judge_errors += 1
            log.exception("judging trace %s failed", trace.trace_id.hex())
            root = next((r for r in to_records_safe(fragments) if r.parent_span_id is None), None)
            if root is None:
                return []
            return [
                Verdict(
                    trace_id=trace.trace_id.hex(),
                    root_span_id=root.span_id,
                    verdict="error",
                    layers={},
                    error=f"{type(exc).__name__}: {exc}",
                )
            ]
        return verdicts

    def decide(self, trace: PendingTrace) -> Outcome:
        """Judge and stamp one trace: its framed fragments with their span counts (payload
        pieces), its verdicts and what late spans will get. Nothing is counted or
        remembered until ``settle``, so an outcome can be thrown away (no room in a
        forward queue yet, or a failure half-way)."""
        fragments = [ResourceSpans.FromString(b) for b in trace.fragments]
        # CPU time of this thread, not wall time: on the judging thread the wall clock also
        # counts the waits for the GIL while the loop runs, which made every trace look
        # slow under load and kept judging off the loop for good (docs/performance.md).
        began = time.thread_time()
        verdicts = self._judge(trace, fragments)
        seconds = time.thread_time() - began
        # Before anything is written: explanations quote arguments and results.
        verdicts = [
            self.scrubber.verdict(
                v if v.rules_version else replace(v, rules_version=self.rules_version)
            )
            for v in verdicts
        ]
        stamped = conversation_verdicts(trace, verdicts) if trace.roots else verdicts
        pieces, decision = self.mode.decided(trace.fragments, fragments, stamped)
        timed_out = any(
            v.verdict == "error" and (v.error or "").startswith(_TIMEOUT) for v in verdicts
        )
        return Outcome(pieces, verdicts, decision, seconds, timed_out)

    def decide_safely(self, trace: PendingTrace) -> Outcome | Exception:
        """``decide`` on the worker thread: the outcome, or what it raised (one bad trace
        must not take the others; ``failed`` then runs on the loop, as it may touch
        the disk queue)."""
        try:
            return self.decide(trace)
        except Exception as exc:
            return exc

    def failed(self, trace: PendingTrace, exc: BaseException) -> Outcome:
        """The fallback when ``decide`` raised: only this trace is affected.

        The trace is forwarded unjudged with ``tracejudge.verdict = error`` on its root
        spans, one error verdict goes to the sinks, the failure is counted in
        ``decision_errors`` and logged once with the trace id. Fragments that do not parse
        at all are not forwarded (see below).
        """
        self.stats.decision_errors += 1
        message = self.scrubber.text(f"deciding the trace failed: {type(exc).__name__}: {exc}")
        pieces: list[Piece] = []
        unparsed: list[bytes] = []
        parsed_spans = 0
        root_id = ""
        for raw in trace.fragments:
            try:
                rs = ResourceSpans.FromString(raw)
            except Exception:
                unparsed.append(raw)
                continue
            parsed_spans += sum(len(ss.spans) for ss in rs.scope_spans)
            piece, marked = self.mode.failed(rs, message)
            root_id = root_id or marked
            if piece is not None:
                pieces.append(piece)
        note = ""
        if unparsed and not self.mode.forwards_on_arrival:
            # Bytes nothing can parse are never forwarded: batched with other traces'
            # payloads they would make the backend refuse those too. They are kept in a
            # quarantine file when there is a disk queue, and counted as dropped.
            lost = max(0, trace.spans - parsed_spans)
            self.stats.count("dropped", lost)
            note = f"; {len(unparsed)} unparseable fragments ({lost} spans) not forwarded"
            note += self.durability.keep_unparsed(trace.trace_id, unparsed)
        log.error(
            "deciding trace %s failed (%s: %s); forwarded unjudged with verdict error%s",
            trace.trace_id.hex(),
            type(exc).__name__,
            exc,
            note,
            exc_info=exc,
        )
        verdict = Verdict(
            trace_id=trace.trace_id.hex(),
            root_span_id=root_id,
            verdict="error",
            layers={},
            rules_version=self.rules_version,
            error=message,
        )
        return Outcome(pieces, [verdict], Decision(verdict="error"))


def payloads_for(pieces: Sequence[Piece], ready_at: float, max_batch_bytes: int) -> list[Payload]:
    """Group a trace's pieces into payloads of at most ``max_batch_bytes`` (a big trace
    becomes several requests, so no single forward exceeds a backend's message limit);
    the last one counts the trace as finished."""
    out: list[Payload] = []
    group: list[bytes] = []
    size = spans = 0
    for piece in pieces:
        if group and size + len(piece.data) > max_batch_bytes:
            out.append(Payload(b"".join(group), spans, 0, ready_at))
            group, size, spans = [], 0, 0
        group.append(piece.data)
        size += len(piece.data)
        spans += piece.spans
    if group:
        out.append(Payload(b"".join(group), spans, 1, ready_at))
    return out


def to_records_safe(fragments: Sequence[ResourceSpans]) -> list[Any]:
    """Decode for the error path; an undecodable trace yields no records."""
    try:
        return to_records(fragments)
    except Exception:
        return []
