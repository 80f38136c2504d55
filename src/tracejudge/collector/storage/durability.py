"""Whether accepted data survives a restart, gathered in one place per mode.

Without ``--queue-dir`` (``InMemory``) accepted fragments and decided payloads live in
memory only: a crash loses them, shutdown decides everything at once. With it
(``OnDisk``) every accepted fragment is in the disk queue's inbox before the client's 200,
every decision moves its trace to the outbox in one transaction, and what cannot be
replayed is quarantined to a file. The decision stage calls the same four methods either way and
never tests for a store itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from tracejudge.collector.codec.otlp import TraceFragment
from tracejudge.collector.consumer import Throttled
from tracejudge.collector.exporters.forward import Item, Release, TargetQueue
from tracejudge.collector.processors.stamp import Decision
from tracejudge.collector.storage.store import DiskStore, StoreError

Row = tuple[TargetQueue, Item]
"""One payload bound for one forward queue."""


class Durability(Protocol):
    """What the decision stage persists, and when."""

    @property
    def durable(self) -> bool:
        """True when undecided traces survive a restart (so shutdown may leave some)."""
        ...

    def accept(self, fresh: Sequence[TraceFragment], rows: Sequence[Row]) -> None:
        """Persist a request's fresh fragments and direct payloads before its 200 (setting
        the items' row ids); ``Throttled`` when they cannot be (nothing was written)."""
        ...

    def commit(
        self, rows: Sequence[Row], decided: Sequence[bytes], decisions: Sequence[Decision]
    ) -> None:
        """Move decided traces from inbox to outbox with their payloads and decisions.
        Never raises: when the disk refuses, the payloads travel in memory and the inbox
        rows are released once every target has its copy."""
        ...

    def quarantine_inbox(self, row_id: int, data: bytes, reason: str) -> Path:
        """Move an inbox row that cannot be replayed to a file; returns its path."""
        ...

    def keep_unparsed(self, trace_id: bytes, fragments: Sequence[bytes]) -> str:
        """Keep fragments nothing can parse (never forwarded); a note for the log line."""
        ...


class InMemory:
    """No disk queue: nothing to persist, nothing to replay."""

    durable = False

    def accept(self, fresh: Sequence[TraceFragment], rows: Sequence[Row]) -> None:
        return None

    def commit(
        self, rows: Sequence[Row], decided: Sequence[bytes], decisions: Sequence[Decision]
    ) -> None:
        return None

    def quarantine_inbox(self, row_id: int, data: bytes, reason: str) -> Path:
        raise RuntimeError("no disk queue: there is no inbox to replay")

    def keep_unparsed(self, trace_id: bytes, fragments: Sequence[bytes]) -> str:
        return ""


class OnDisk:
    """The SQLite disk queue (``DiskStore``)."""

    durable = True

    def __init__(self, store: DiskStore, retry_after: float) -> None:
        self.store = store
        self.retry_after = retry_after

    def accept(self, fresh: Sequence[TraceFragment], rows: Sequence[Row]) -> None:
        if not (fresh or rows):
            return
        try:
            ids = self.store.accept(
                [(f.trace_id, f.data) for f in fresh],
                [(q.name, it.payload, it.spans, it.traces) for q, it in rows],
            )
        except StoreError as exc:  # nothing was written: refuse, the client retries
            raise Throttled(str(exc), self.retry_after) from exc
        for (_, item), row_id in zip(rows, ids, strict=True):
            item.row_id = row_id

    def commit(
        self, rows: Sequence[Row], decided: Sequence[bytes], decisions: Sequence[Decision]
    ) -> None:
        if not (rows or decided):
            return
        try:
            ids = self.store.commit_decisions(
                list(decided),
                [(q.name, it.payload, it.spans, it.traces) for q, it in rows],
                [
                    (tid, d.verdict, decision_codes_json(d))
                    for tid, d in zip(decided, decisions, strict=True)
                ],
            )
        except StoreError:
            if decided:
                if rows:
                    release = Release(self.store, list(decided), len(rows))
                    for _, item in rows:
                        item.release = release
                else:
                    self.store.release_inbox(list(decided))
        else:
            for (_, item), row_id in zip(rows, ids, strict=True):
                item.row_id = row_id

    def quarantine_inbox(self, row_id: int, data: bytes, reason: str) -> Path:
        return self.store.quarantine_inbox(row_id, data, reason)

    def keep_unparsed(self, trace_id: bytes, fragments: Sequence[bytes]) -> str:
        try:
            return f", kept in {self.store.quarantine_fragments(trace_id, fragments)}"
        except Exception as exc:
            return f", could not be quarantined ({exc})"


def durability_for(store: DiskStore | None, retry_after: float) -> Durability:
    """The mode for a decision stage (the one place ``store is None`` is tested)."""
    return InMemory() if store is None else OnDisk(store, retry_after)


def decision_codes_json(d: Decision) -> str:
    """A decision's failure codes as JSON (span id hex -> codes), for the disk queue."""
    return json.dumps({sid.hex(): codes for sid, codes in d.codes_by_span.items()})


def decision_from_json(verdict: str, codes: str) -> Decision:
    """The inverse of ``decision_codes_json``; ``ValueError`` when unreadable."""
    raw = json.loads(codes)
    if not isinstance(raw, dict):
        raise ValueError("codes: not an object")
    by_span = {bytes.fromhex(k): [str(c) for c in v] for k, v in raw.items()}
    return Decision(verdict, by_span)
