"""What ``tracejudge queue`` does to a disk queue: list, drain and drop removed targets' rows.

A removed target (``targets.py``) leaves its payloads in the outbox, where no worker reads
them: a collector never guesses where they should go. These operations let a person
decide. ``drain`` sends them, oldest first and batched like the forwarder does, to a
backend given by URL, deleting each batch only once the backend acknowledged it (so an
interruption resends at most one batch); ``drop`` deletes them. Both refuse the rows of a
target the last ``serve`` start configured: those belong to that collector's workers,
which deliver them (and would deliver them twice if drained too).

They run as well while ``serve`` runs on the same directory (SQLite serialises the writers,
and serve never reads a removed target's rows).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tracejudge.collector.exporters.forward import (
    ForwardTarget,
    PermanentError,
    RetryableError,
    make_target,
)
from tracejudge.collector.storage.store import DiskStore, OutRow, QueuedTarget, StoreError


class QueueCommandError(Exception):
    """A ``tracejudge queue`` operation failed; the message says why and what is left."""


class QueueUsageError(QueueCommandError):
    """The operation was asked of something that is not there (no queue, no such target)."""


@dataclass(frozen=True, slots=True)
class TargetEntry:
    """One line of ``queue list``: a target key, whether serve still has it, what waits."""

    key: str
    configured: bool
    url: str | None
    payloads: int
    spans: int


def open_queue(directory: Path) -> DiskStore:
    """The disk queue in ``directory``; an error (not a new, empty queue) when there is none."""
    if not (directory / "queue.sqlite3").is_file():
        raise QueueUsageError(f"no disk queue in {directory} (queue.sqlite3 not found)")
    try:
        return DiskStore(directory)
    except StoreError as exc:
        raise QueueCommandError(str(exc)) from exc


def list_targets(store: DiskStore) -> list[TargetEntry]:
    """Every target the last start configured (even with nothing queued) and every key with
    payloads queued, configured ones first."""
    recorded = store.recorded_targets()
    removed = {q.key: q for q in store.removed_targets(recorded)}
    queued = {q.key: q for q in store.queued_targets()}
    out: list[TargetEntry] = []
    for spec in recorded:
        mine = [q for k, q in queued.items() if k in (spec.name, spec.url)]
        out.append(
            TargetEntry(
                spec.name,
                True,
                spec.url,
                sum(q.payloads for q in mine),
                sum(q.spans for q in mine),
            )
        )
    for key, q in removed.items():
        out.append(TargetEntry(key, False, q.url, q.payloads, q.spans))
    return out


def _selected(store: DiskStore, keys: tuple[str, ...]) -> list[QueuedTarget]:
    """The removed targets named by ``keys`` (all of them when none is named)."""
    recorded = store.recorded_targets()
    removed = {q.key: q for q in store.removed_targets(recorded)}
    if not keys:
        return list(removed.values())
    live = {s.name: s for s in recorded} | {s.url: s for s in recorded}
    out: list[QueuedTarget] = []
    for key in keys:
        if key in live:
            raise QueueUsageError(
                f"target {key!r} was configured at serve's last start: serve delivers its "
                "rows. Remove it from serve's configuration (and restart) to drain or drop them"
            )
        if key not in removed:
            known = ", ".join(sorted(removed)) or "none"
            raise QueueUsageError(
                f"no payloads queued for a removed target {key!r} (removed targets: {known})"
            )
        out.append(removed[key])
    return out


@dataclass(frozen=True, slots=True)
class Moved:
    """What one ``drain`` or ``drop`` did for one target key."""

    key: str
    payloads: int
    spans: int


def drop(store: DiskStore, keys: tuple[str, ...]) -> list[Moved]:
    """Delete the rows of removed targets (all when ``keys`` is empty)."""
    out = []
    for q in _selected(store, keys):
        try:
            n, spans = store.drop_target(q.key)
        except StoreError as exc:
            raise QueueCommandError(str(exc)) from exc
        out.append(Moved(q.key, n, spans))
    return out


async def drain(
    store: DiskStore,
    keys: tuple[str, ...],
    url: str,
    *,
    timeout: float = 10.0,
    max_batch_bytes: int = 4 * 1024**2,
    attempts: int = 5,
    retry_initial: float = 0.5,
) -> list[Moved]:
    """Send removed targets' rows to ``url`` and delete each batch once acknowledged.

    A retryable failure is retried ``attempts`` times with backoff, then stops the drain
    (the rest stays queued: run it again); a permanent refusal stops it at once, naming
    the answer, so a person can drop what no backend takes."""
    selected = _selected(store, keys)
    target = make_target(url, timeout)
    out: list[Moved] = []
    try:
        for q in selected:
            sent = spans = 0
            for batch in _batches(store, q.key, max_batch_bytes):
                await _send(target, b"".join(r[2] for r in batch), attempts, retry_initial)
                try:
                    store.remove_rows([r[0] for r in batch])
                except StoreError as exc:
                    raise QueueCommandError(
                        f"{exc}; {len(batch)} payloads were delivered but are still queued"
                    ) from exc
                sent += len(batch)
                spans += sum(r[3] for r in batch)
            out.append(Moved(q.key, sent, spans))
    finally:
        await target.close()
    return out


def _batches(store: DiskStore, key: str, max_bytes: int) -> Iterator[list[OutRow]]:
    """One key's rows, oldest first, in batches of at most ``max_bytes`` (a larger row
    goes alone), read from the database a page at a time."""
    batch: list[OutRow] = []
    size = 0
    for row in store.iter_target_rows(key):
        if batch and size + len(row[2]) > max_bytes:
            yield batch
            batch, size = [], 0
        batch.append(row)
        size += len(row[2])
    if batch:
        yield batch


async def _send(target: ForwardTarget, payload: bytes, attempts: int, retry_initial: float) -> None:
    """One batch, with backoff on retryable failures; ``QueueCommandError`` when it fails."""
    for attempt in range(1, attempts + 1):
        try:
            await target.send(payload)
            return
        except RetryableError as exc:
            if attempt == attempts:
                raise QueueCommandError(
                    f"{target.url} is not accepting ({exc}) after {attempts} tries; what is "
                    "left stays queued: run the drain again"
                ) from exc
            await asyncio.sleep(retry_initial * 2 ** (attempt - 1))
        except PermanentError as exc:
            raise QueueCommandError(
                f"{target.url} refused a batch permanently ({exc}); it stays queued: "
                "`tracejudge queue drop` discards it"
            ) from exc
