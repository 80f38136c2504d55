"""Conversations held across traces, judged as one run when the conversation ends.

Many frameworks emit one trace per user turn; the turns of one conversation share
``gen_ai.conversation.id`` (or ``session.id``) on their runs, and ``tracejudge eval`` judges
them as one run (``merge_conversations``). A collector that judged each trace alone would
give the same traces another verdict: a write in turn 3 confirmed by the user's "yes" in
turn 2 would fail. With ``conversation_wait`` set, a finished trace whose runs carry a
conversation id is therefore *held* instead of judged, with the other traces of its
conversation, until one of:

- the conversation has been quiet for ``conversation_wait`` (no trace of it assembled and no
  span of a held trace received in that time);
- it has been held ``conversation_max_hold`` since its first trace (a session that never
  goes quiet is still judged, and memory stays bounded);
- a turn marks the end: ``tracejudge.conversation.end = true`` on its agent span;
- shutdown (SIGTERM): everything held is judged and forwarded.

A held conversation is then one entry of the decision stage's batch: a ``PendingTrace``
whose fragments are every trace's and whose ``members`` name them. The judge gets all the
spans at once, and ``Engine.judge_spans`` merges them through ``merge_conversations``, the
offline code path. Its verdict is stamped on the merged run's root and, by
``conversation_verdicts``, on the agent root of every other trace of the conversation.

Held traces count against ``max_traces`` and ``max_buffered_bytes`` like buffered ones (the
counters live on the ``TraceBuffer``), so a flood of conversations pushes back on the
receivers instead of growing memory. A trace cut at ``max_spans_per_trace`` is judged alone
as today: holding it would hold its unbounded remainder too.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from tracejudge import semconv as sc
from tracejudge.collector.codec.otlp import TraceFragment, to_records
from tracejudge.collector.processors.buffer import PendingTrace, TraceBuffer
from tracejudge.engine.verdict import Verdict
from tracejudge.model.build import build_runs

_CONVERSATION_KEY = sc.GEN_AI_CONVERSATION_ID.encode()
_SESSION_KEY = sc.SESSION_ID.encode()


def _may_have_id(fragments: Sequence[bytes]) -> bool:
    """False when no fragment's bytes contain either key: such a trace has no conversation
    id and is never parsed here, so traces without one cost two substring searches per
    fragment and are decided exactly as before."""
    return any(_CONVERSATION_KEY in data or _SESSION_KEY in data for data in fragments)


@dataclass(slots=True)
class Membership:
    """What a finished trace contributes to its conversation."""

    conversation_id: str
    roots: list[str]
    """Root span ids (hex) of the trace's runs in the conversation."""
    ended: bool


def _true(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def membership(trace: PendingTrace) -> Membership | None:
    """The conversation a finished trace belongs to, or None (judge it alone now).

    The id is the first run's that has one, read the way the run builder reads it (the
    agent span, its resource, then any span of the run). A trace whose runs name several
    conversations is held with the first; its other runs are judged with it, alone.
    """
    if trace.truncated:
        return None
    if not _may_have_id(trace.fragments):
        return None
    try:
        runs = build_runs(to_records([ResourceSpans.FromString(b) for b in trace.fragments]))
    except Exception:  # the decision reports what is wrong with this trace
        return None
    cid = next((r.conversation_id for r in runs if r.conversation_id), None)
    if cid is None:
        return None
    mine = [r for r in runs if r.conversation_id == cid]
    ended = any(_true(r.root_attributes.get(sc.TRACEJUDGE_CONVERSATION_END)) for r in mine)
    return Membership(cid, [r.root_span_id for r in mine], ended)


class ConversationBuffer:
    """Held conversations keyed by conversation id, with their decision deadlines."""

    def __init__(self, buffer: TraceBuffer, wait: float, max_hold: float) -> None:
        self.buffer = buffer
        self.wait = wait
        self.max_hold = max_hold
        self.units: dict[str, PendingTrace] = {}
        self.by_trace: dict[bytes, PendingTrace] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self.units)

    def take(self, traces: Sequence[PendingTrace], now: float) -> list[PendingTrace]:
        """Hold the finished traces that belong to a conversation; returns the others
        (to decide now), in their order."""
        out: list[PendingTrace] = []
        for t in traces:
            m = membership(t)
            if m is None:
                out.append(t)
            else:
                self.hold(t, m, now)
        return out

    def hold(self, t: PendingTrace, m: Membership, now: float) -> None:
        """Add one finished trace to its conversation (created on its first trace)."""
        unit = self.units.get(m.conversation_id)
        if unit is None:
            unit = PendingTrace(t.trace_id, now, now, math.inf, conversation=m.conversation_id)
            unit.root = True
            self.units[m.conversation_id] = unit
        unit.fragments.extend(t.fragments)
        unit.logs.extend(t.logs)  # its log records (counted in t.nbytes) travel with it
        unit.log_records += t.log_records
        unit.members.append(t.trace_id)
        unit.roots.extend((t.trace_id.hex(), r) for r in m.roots)
        unit.ended = unit.ended or m.ended
        self.by_trace[t.trace_id] = unit
        self._grow(unit, t.nbytes, t.spans, 1)
        self._touch(unit, now)

    def add(self, frag: TraceFragment, now: float) -> bool:
        """Take a span of a held trace (it restarts the quiet time); False when the trace
        is not held."""
        unit = self.by_trace.get(frag.trace_id)
        if unit is None:
            return False
        unit.fragments.append(frag.data)
        self._grow(unit, len(frag.data), frag.spans, 0)
        self._touch(unit, now)
        return True

    def add_logs(self, trace_id: bytes, data: bytes, records: int, now: float) -> bool:
        """Take log records of a held trace (``logs_intake.py``), as ``add`` takes a span;
        False when the trace is not held."""
        unit = self.by_trace.get(trace_id)
        if unit is None:
            return False
        unit.logs.append(data)
        unit.log_records += records
        self._grow(unit, len(data), 0, 0)
        self._touch(unit, now)
        return True

    def _grow(self, unit: PendingTrace, nbytes: int, spans: int, traces: int) -> None:
        unit.nbytes += nbytes
        unit.spans += spans
        self.buffer.held_bytes += nbytes
        self.buffer.held_spans += spans
        self.buffer.held_traces += traces

    def _touch(self, unit: PendingTrace, now: float) -> None:
        unit.last = now
        deadline = now if unit.ended else min(now + self.wait, unit.first + self.max_hold)
        if deadline != unit.deadline:
            unit.deadline = deadline
            heapq.heappush(self._heap, (deadline, next(self._seq), unit.conversation))

    def _remove(self, unit: PendingTrace) -> None:
        del self.units[unit.conversation]
        for tid in unit.members:
            self.by_trace.pop(tid, None)
        self.buffer.held_bytes -= unit.nbytes
        self.buffer.held_spans -= unit.spans
        self.buffer.held_traces -= len(unit.members)

    def next_deadline(self) -> float:
        """The earliest pending deadline (possibly stale, so never late), or infinity."""
        return self._heap[0][0] if self._heap else math.inf

    def due(self, now: float) -> list[PendingTrace]:
        """Remove and return the conversations whose deadline has passed (oldest first)."""
        out: list[PendingTrace] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            deadline, _, cid = heapq.heappop(heap)
            unit = self.units.get(cid)
            if unit is not None and unit.deadline == deadline:
                self._remove(unit)
                out.append(unit)
        return out

    def put_back(self, unit: PendingTrace) -> None:
        """Return a conversation taken by ``due`` or ``drain`` and not decided after all
        (no room in a forward queue yet); due again at once."""
        self.units[unit.conversation] = unit
        for tid in unit.members:
            self.by_trace[tid] = unit
        self.buffer.held_bytes += unit.nbytes
        self.buffer.held_spans += unit.spans
        self.buffer.held_traces += len(unit.members)
        heapq.heappush(self._heap, (unit.deadline, next(self._seq), unit.conversation))

    def drain(self) -> list[PendingTrace]:
        """Remove and return every held conversation (shutdown: judge them now)."""
        out = list(self.units.values())
        for unit in out:
            self._remove(unit)
        self._heap.clear()
        return out


def conversation_verdicts(unit: PendingTrace, verdicts: Sequence[Verdict]) -> list[Verdict]:
    """The verdicts to stamp for a decided entry: ``verdicts``, plus, for a conversation,
    a copy of its verdict for every run root of it that has no verdict of its own (the
    agent root of each trace after the first), so every trace of the conversation shows
    the verdict in a trace backend. Copies carry no rule outcomes: the evaluation events
    are stamped once, on the spans they judged."""
    if not unit.roots:
        return list(verdicts)
    roots = {root for _, root in unit.roots}
    conv = next((v for v in verdicts if v.root_span_id in roots), None)
    if conv is None:
        return list(verdicts)
    out = list(verdicts)
    judged = {v.root_span_id for v in verdicts}
    for trace_hex, root in unit.roots:
        if root in judged:
            continue
        judged.add(root)
        out.append(
            Verdict(
                trace_id=trace_hex,
                root_span_id=root,
                verdict=conv.verdict,
                layers=dict(conv.layers),
                agent=conv.agent,
                case_id=conv.case_id,
                variant=conv.variant,
                run_id=conv.run_id,
                experiment_id=conv.experiment_id,
                primary=conv.primary,
                findings=list(conv.findings),
                metrics=dict(conv.metrics),
                rules_version=conv.rules_version,
                error=conv.error,
            )
        )
    return out


def conversation_trace_ids(unit: PendingTrace, v: Verdict) -> list[str] | None:
    """For the verdict of a held conversation's run, the traces (hex) it was judged over;
    None for any other verdict."""
    if not unit.roots or v.root_span_id not in {root for _, root in unit.roots}:
        return None
    return [tid.hex() for tid in unit.members]
