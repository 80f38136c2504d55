"""Replaying the disk queue at start: what was accepted before a restart goes on from here.

Each queued payload goes back to its target's queue (by name: a target whose URL changed
gets its rows), what waits for targets no longer configured is reported, the decisions the
queue remembers are loaded (late spans of a trace judged before the restart get its
verdict, not a second one), and the inbox's fragments are buffered again. A fragment that
cannot be replayed is quarantined to a file instead of failing every start.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from tracejudge.collector.codec.otlp import TraceFragment, fragment_info
from tracejudge.collector.exporters.forward import Item, TargetQueue
from tracejudge.collector.exporters.targets import TargetSpec
from tracejudge.collector.processors.buffer import DecisionCache, TraceBuffer
from tracejudge.collector.storage.durability import Durability, decision_from_json
from tracejudge.collector.storage.store import DecidedRow, DiskStore, QueuedTarget
from tracejudge.collector.telemetry.stats import Stats

log = logging.getLogger("tracejudge.collector")

__all__ = ["Replayable", "replay_disk_queue", "replay_inbox", "restore_decisions"]


class Replayable(Protocol):
    """What takes the disk queue's decisions and inbox back (the decision stage)."""

    def restore_decisions(self, rows: Sequence[DecidedRow]) -> None:
        """Remember decisions made before the restart."""
        ...

    def replay_inbox(self, rows: Sequence[tuple[int, bytes]]) -> int:
        """Buffer undecided fragments again; returns how many were quarantined."""
        ...


def replay_disk_queue(
    store: DiskStore, queues: list[TargetQueue], specs: list[TargetSpec], decision: Replayable
) -> list[QueuedTarget]:
    """Hand each queued payload to its target's queue (by name: a target whose URL
    changed gets its rows), report what waits for removed targets, replay the inbox.
    Returns the removed targets' payloads, as counted now."""
    by_name = {q.name: q for q in queues}
    store.record_targets(specs)
    outbox = store.load_outbox(specs)
    for row_id, name, payload, spans, traces in outbox:
        by_name[name].put(Item(payload, spans, traces, None, row_id))
    removed = store.removed_targets(specs)
    for r in removed:
        log.warning(
            "disk queue: %d payloads (%d spans) for the removed target %r%s are kept on "
            "disk; deliver them with `tracejudge queue drain --queue-dir %s --target %s "
            "--to URL` or discard them with `tracejudge queue drop`",
            r.payloads,
            r.spans,
            r.key,
            f" (last {r.url})" if r.url and r.url != r.key else "",
            store.path.parent,
            r.key,
        )
    decision.restore_decisions(store.load_decided())
    inbox = store.load_inbox()
    quarantined = decision.replay_inbox(inbox)
    if outbox or inbox:
        log.info(
            "disk queue: replayed %d payloads and %d fragments (%d quarantined)",
            len(outbox),
            len(inbox) - quarantined,
            quarantined,
        )
    return removed


def restore_decisions(decided: DecisionCache, rows: Sequence[DecidedRow]) -> None:
    """Load decisions remembered by the disk queue (oldest first), so spans arriving
    after a restart for a trace judged before it get that verdict, not a second one."""
    for tid, verdict, codes in rows:
        try:
            decided.put(tid, decision_from_json(verdict, codes))
        except ValueError:
            log.warning("disk queue: skipping an unreadable decision for %s", tid.hex())


def replay_inbox(
    rows: Sequence[tuple[int, bytes]],
    buffer: TraceBuffer,
    now: float,
    durability: Durability,
    stats: Stats,
) -> int:
    """Re-buffer fragments persisted before a restart (their timers start ``now``).

    A fragment that cannot be parsed or has no valid trace id (written by an older
    version that acknowledged it unchecked) would fail every decision and every start;
    it is moved to a quarantine file with a log line instead, and start-up goes on.
    Returns how many were quarantined.
    """
    quarantined = 0
    for row_id, data in rows:
        frag: TraceFragment | None = None
        try:
            frag = fragment_info(data)
        except Exception as exc:  # DecodeError, depth limits: whatever parsing raises
            reason = f"unparseable fragment ({type(exc).__name__}: {exc})"
        else:
            reason = "" if _valid_trace_id(frag.trace_id) else "invalid trace id"
        if frag is None or reason:
            quarantined += 1
            _quarantine(durability, stats, row_id, data, reason)
            continue
        if frag.spans:
            buffer.add(frag, now)
    return quarantined


def _quarantine(
    durability: Durability, stats: Stats, row_id: int, data: bytes, reason: str
) -> None:
    try:
        path = durability.quarantine_inbox(row_id, data, reason)
    except Exception:
        log.exception("disk queue: could not quarantine inbox row %d (%s)", row_id, reason)
        return
    stats.quarantined += 1
    log.error("disk queue: inbox row %d cannot be replayed (%s); moved to %s", row_id, reason, path)


def _valid_trace_id(tid: bytes) -> bool:
    return len(tid) == 16 and tid != bytes(16)
