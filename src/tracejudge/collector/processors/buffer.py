"""Trace assembly: serialized fragments per trace, and when each trace is finished.

Agent runs last from seconds to minutes, so a single fixed wait either cuts long runs or
holds short ones too long. A trace is finished when its root span has arrived and
``wait_after_root`` passed with no new span, or at the latest ``wait`` after its first span.
Deadlines live in a heap with lazy invalidation, so a timer tick costs O(due traces), not
O(buffered traces). The buffer never evicts: when it is full the receivers push back.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import OrderedDict
from dataclasses import dataclass, field

from tracejudge.collector.codec.otlp import TraceFragment
from tracejudge.collector.processors.stamp import Decision


@dataclass(slots=True)
class PendingTrace:
    """One trace being assembled. ``fragments`` are serialized ``ResourceSpans``."""

    trace_id: bytes
    first: float
    last: float
    deadline: float
    fragments: list[bytes] = field(default_factory=list)
    spans: int = 0
    nbytes: int = 0
    root: bool = False
    truncated: bool = False
    """True when the span limit forced an early decision (later spans count as late)."""
    needed: int = 0
    """Forward-queue bytes its decision took when it last did not fit (0: not tried)."""
    conversation: str = ""
    """A held conversation (see ``collector.conversations``): its id; "" for a trace."""
    members: list[bytes] = field(default_factory=list)
    """The trace ids a held conversation's fragments come from (empty for a trace)."""
    roots: list[tuple[str, str]] = field(default_factory=list)
    """(trace id, span id), hex: the root span of each run of the conversation."""
    ended: bool = False
    """A turn of the conversation said it is the last (``tracejudge.conversation.end``)."""
    logs: list[bytes] = field(default_factory=list)
    """Serialized ``ResourceLogs`` of the trace's log records (``logs.py``), joined to its
    spans at the decision and counted in ``nbytes`` like the spans."""
    log_records: int = 0

    def trace_ids(self) -> list[bytes]:
        """The traces this entry decides: its members, or itself."""
        return self.members if self.members else [self.trace_id]


class TraceBuffer:
    """Pending traces keyed by binary trace id, with decision deadlines."""

    def __init__(
        self,
        *,
        wait_after_root: float,
        wait: float,
        max_traces: int,
        max_bytes: int,
        max_spans_per_trace: int,
    ) -> None:
        self.wait_after_root = wait_after_root
        self.wait = wait
        self.max_traces = max_traces
        self.max_bytes = max_bytes
        self.max_spans_per_trace = max_spans_per_trace
        self.traces: dict[bytes, PendingTrace] = {}
        self.nbytes = 0
        self.spans = 0
        self.held_traces = 0
        """Traces held in conversations (``ConversationBuffer``): memory like ``traces``'."""
        self.held_bytes = 0
        self.held_spans = 0
        self._heap: list[tuple[float, int, bytes]] = []
        self._seq = itertools.count()

    def full(self) -> bool:
        """True when no new data should be accepted (the receivers answer "retry later").
        Traces held in conversations count like buffered ones."""
        return (
            len(self.traces) + self.held_traces >= self.max_traces
            or self.nbytes + self.held_bytes >= self.max_bytes
        )

    def used_bytes(self) -> int:
        """Bytes kept in memory: buffered traces and traces held in conversations."""
        return self.nbytes + self.held_bytes

    def add(self, frag: TraceFragment, now: float) -> None:
        """Buffer one fragment and move its trace's deadline."""
        t = self.traces.get(frag.trace_id)
        if t is None:
            t = PendingTrace(frag.trace_id, now, now, math.inf)
            self.traces[frag.trace_id] = t
        t.fragments.append(frag.data)
        t.spans += frag.spans
        t.nbytes += len(frag.data)
        t.root = t.root or frag.has_root
        self.nbytes += len(frag.data)
        self.spans += frag.spans
        self._moved(t, now)

    def add_logs(self, trace_id: bytes, data: bytes, records: int, now: float) -> None:
        """Hold one trace's log records (a serialized ``ResourceLogs``) with its spans: the
        trace waits for its logs exactly as it waits for its spans (records that come
        first open the trace, later ones move its deadline), within the same byte limit."""
        t = self.traces.get(trace_id)
        if t is None:
            t = PendingTrace(trace_id, now, now, math.inf)
            self.traces[trace_id] = t
        t.logs.append(data)
        t.log_records += records
        t.nbytes += len(data)
        self.nbytes += len(data)
        self._moved(t, now)

    def _moved(self, t: PendingTrace, now: float) -> None:
        t.last = now
        deadline = t.first + self.wait
        if t.root:
            deadline = min(deadline, now + self.wait_after_root)
        if t.spans >= self.max_spans_per_trace:
            t.truncated = True
            deadline = now
        if deadline != t.deadline:
            t.deadline = deadline
            heapq.heappush(self._heap, (deadline, next(self._seq), t.trace_id))

    def _remove(self, t: PendingTrace) -> None:
        del self.traces[t.trace_id]
        self.nbytes -= t.nbytes
        self.spans -= t.spans

    def next_deadline(self) -> float:
        """The earliest pending deadline (possibly stale, so never late), or infinity."""
        return self._heap[0][0] if self._heap else math.inf

    def due(self, now: float, limit: int | None = None) -> list[PendingTrace]:
        """Remove and return the traces whose deadline has passed (oldest first)."""
        out: list[PendingTrace] = []
        heap = self._heap
        while heap and heap[0][0] <= now and (limit is None or len(out) < limit):
            deadline, _, tid = heapq.heappop(heap)
            t = self.traces.get(tid)
            if t is not None and t.deadline == deadline:
                self._remove(t)
                out.append(t)
        return out

    def put_back(self, t: PendingTrace) -> None:
        """Return a trace taken by ``due`` or ``drain`` and not decided after all; it
        keeps its (passed) deadline, so it is due again at once."""
        self.traces[t.trace_id] = t
        self.nbytes += t.nbytes
        self.spans += t.spans
        heapq.heappush(self._heap, (t.deadline, next(self._seq), t.trace_id))

    def drain(self) -> list[PendingTrace]:
        """Remove and return every pending trace (shutdown: decide everything now)."""
        out = list(self.traces.values())
        self.traces.clear()
        self._heap.clear()
        self.nbytes = 0
        self.spans = 0
        return out


_ENTRY_BYTES = 270
"""Measured (tracemalloc, 100,000 entries): a decision without codes, its 16-byte key
and its LRU slot."""
_SPAN_BYTES = 110
_CODES_BYTES = 160
_CODE_BYTES = 58


def decision_bytes(decision: Decision) -> int:
    """Estimated memory of one cached decision (a little above the measured figures:
    a pass decision ~266 B, a fail citing one span with one code ~531 B)."""
    codes = decision.codes_by_span
    if not codes:
        return _ENTRY_BYTES
    size = _ENTRY_BYTES + _CODES_BYTES
    for cs in codes.values():
        size += _SPAN_BYTES
        for c in cs:
            size += _CODE_BYTES + len(c)
    return size


class DecisionCache:
    """LRU of recent decisions, so late spans get the verdict their trace already got.

    Bounded by entries (``size``) and by estimated bytes (``max_bytes``), whichever is
    reached first: decisions citing many spans take more room than plain passes."""

    def __init__(self, size: int, max_bytes: int | None = None) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._items: OrderedDict[bytes, tuple[Decision, int]] = OrderedDict()

    def get(self, trace_id: bytes) -> Decision | None:
        """The cached decision (refreshing its recency), or None."""
        entry = self._items.get(trace_id)
        if entry is None:
            return None
        self._items.move_to_end(trace_id)
        return entry[0]

    def put(self, trace_id: bytes, decision: Decision) -> None:
        """Remember a decision, forgetting the least recently used beyond the limits."""
        old = self._items.pop(trace_id, None)
        if old is not None:
            self.nbytes -= old[1]
        size = decision_bytes(decision)
        self._items[trace_id] = (decision, size)
        self.nbytes += size
        items = self._items
        cap = self.max_bytes
        while len(items) > self.size or (cap is not None and self.nbytes > cap and len(items) > 1):
            self.nbytes -= items.popitem(last=False)[1][1]

    def __len__(self) -> int:
        return len(self._items)
