"""Optional disk queue (SQLite in WAL mode) so no accepted span is lost to a crash.

Two tables: ``inbox`` holds every accepted fragment until its trace is decided; ``outbox``
holds every stamped payload until its target acknowledges it. A decision moves a trace
from inbox to outbox in one transaction, so after a crash (even SIGKILL) the restart
replays inbox fragments into the buffer and outbox payloads into the forward queues.
Spans may then be delivered twice (at-least-once), never zero times.

Outbox rows carry their target's *name* (``targets.py``), not its URL, so they follow the
target when its address changes; rows written before names existed carry a URL and are
matched by it. ``targets`` records the names configured at the last start (and the URL
each had), so ``tracejudge queue`` can tell a removed target's rows from a live one's.

Disk faults (a full disk, an I/O error, the size limit) surface as ``StoreError`` and
never lose an acknowledged span: a failed ``accept`` means the request is refused (the
client retries), a failed decision commit leaves the trace's inbox rows in place (the
payloads travel in memory and the rows are released once every target has them), and a
failed delete is remembered and retried, in a transaction of its own, before the next
write. Deleting never needs free space: when the volume is full a delete frees the
reserve (``headroom.py``) first, and after it the WAL is checkpointed to nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tracejudge.collector.exporters.targets import TargetSpec
from tracejudge.collector.storage.files import (
    DEFAULT_FILE_MODE,
    create_private,
    make_dir,
    write_new,
)
from tracejudge.collector.storage.headroom import (
    RESERVE_NAME,
    Reserve,
    Room,
    plan_room,
    volume_free,
    wal_pages,
)

log = logging.getLogger("tracejudge.collector")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS inbox (
  id INTEGER PRIMARY KEY, trace_id BLOB NOT NULL, data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS inbox_trace ON inbox(trace_id);
CREATE TABLE IF NOT EXISTS outbox (
  id INTEGER PRIMARY KEY, target TEXT NOT NULL, data BLOB NOT NULL,
  spans INTEGER NOT NULL, traces INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS decided (
  trace_id BLOB PRIMARY KEY, verdict TEXT NOT NULL, codes TEXT NOT NULL, seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS decided_seq ON decided(seq);
CREATE TABLE IF NOT EXISTS targets (
  name TEXT PRIMARY KEY, url TEXT NOT NULL, configured INTEGER NOT NULL
);
"""

OutRow = tuple[int, str, bytes, int, int]
"""(row id, target name, framed payload, span count, trace count)."""
NewOutRow = tuple[str, bytes, int, int]
"""(target name, framed payload, span count, trace count) of a payload to persist."""
DecidedRow = tuple[bytes, str, str]
"""(trace id, verdict, JSON of the failure codes by span id hex) of a decided trace."""

_LOG_EVERY = 10.0
"""Seconds between repeated disk-fault log lines (a full disk fails every request)."""


class StoreError(OSError):
    """The disk queue failed (disk full, I/O error, size limit, cannot open)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the disk queue refused the last request: ``cap`` (the database is at its cap:
    deliveries make room), ``volume`` (the volume is full: freeing space makes room) or
    ``error`` (another fault); the volume's free bytes then, and the reserve it needs."""

    cause: str
    free_bytes: int
    reserve_bytes: int


@dataclass(frozen=True, slots=True)
class QueuedTarget:
    """Payloads waiting in the outbox for one target key (a name, or a URL in old rows)."""

    key: str
    url: str | None
    """Where the target was last configured (None when the queue never recorded it)."""
    payloads: int
    spans: int


DATABASE = "queue.sqlite3"
"""The database's file name in the queue directory."""


DECIDED_KEEP = 100_000
"""Decided rows a store keeps unless told (``serve`` passes its ``decided_cache_size``)."""


class DiskStore:
    """The inbox/outbox database in ``directory/queue.sqlite3``.

    ``max_bytes`` caps the database file with SQLite's own ``max_page_count``: a write
    that would grow it past the cap fails as on a full disk, so the cap holds exactly for
    the file (the WAL beside it is truncated to ``wal_bytes`` after each checkpoint).
    ``reserve_bytes`` (``headroom.Reserve``) is kept on the volume for deletes; a request
    is accepted only while it is. Files are created with ``file_mode`` (``files.py``).
    """

    def __init__(
        self,
        directory: Path,
        max_bytes: int | None = None,
        *,
        reserve_bytes: int = 0,
        file_mode: int = DEFAULT_FILE_MODE,
        decided_keep: int = DECIDED_KEEP,
    ) -> None:
        make_dir(directory, file_mode)
        self.path = directory / DATABASE
        self.max_bytes = max_bytes
        self.file_mode = file_mode
        self.reserve = Reserve(directory / RESERVE_NAME, reserve_bytes, file_mode)
        try:
            self._db = self._open()
        except sqlite3.Error as exc:
            if not self.reserve.release():  # opening a full volume needs room for -shm
                raise StoreError(f"cannot open the disk queue {self.path}: {exc}") from exc
            log.warning(
                "disk queue %s: opening failed (%s); released the %d-byte reserve to open it",
                self.path,
                exc,
                self.reserve.size,
            )
            try:
                self._db = self._open()
            except sqlite3.Error as again:
                raise StoreError(f"cannot open the disk queue {self.path}: {again}") from again
        self.errors = 0
        """Failed writes since start (each also failed a request, or was retried)."""
        self.last_error: str | None = None
        """The latest fault, cleared by the next successful write."""
        self.refusal: Refusal | None = None
        """Why the last request was refused; None once one is accepted again."""
        self.decided_keep = decided_keep
        """Decided rows kept (the collector's ``decided_cache_size``)."""
        self._seq = int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM decided").fetchone()[0])
        self._pending_inbox: list[bytes] = []
        self._pending_outbox: list[int] = []
        self._logged_at = -_LOG_EVERY
        self._unlogged = 0
        self._written = self.wal_limit
        """Bytes written since the WAL's size was last looked at (``_shrink``)."""
        self._shrink()  # a WAL left large (or a reserve missing) by the last run

    def _open(self) -> sqlite3.Connection:
        if not self.path.exists():  # SQLite gives -wal and -shm the database's mode
            os.close(create_private(self.path, self.file_mode))
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            # Not ON (some builds' default): zeroing deleted rows writes every deleted
            # byte again through the WAL, so a delete would need as much free space as
            # the rows it deletes. FAST zeroes only what a delete writes anyway.
            db.execute("PRAGMA secure_delete=FAST")
            self.page_size = int(db.execute("PRAGMA page_size").fetchone()[0])
            wal = 1000  # SQLite's default checkpoint size, kept after a checkpoint too
            if self.max_bytes is not None:
                pages = max(2, self.max_bytes // self.page_size)
                # SQLite never sets the cap below the pages in use: an existing larger
                # queue keeps its size (and refuses growth) until it drains.
                db.execute(f"PRAGMA max_page_count = {pages}")
                wal = wal_pages(self.max_bytes, self.page_size)
            db.execute(f"PRAGMA wal_autocheckpoint = {wal}")
            db.execute(f"PRAGMA journal_size_limit = {wal * self.page_size}")
            self.wal_limit = wal * self.page_size
            """Bytes the WAL keeps after a checkpoint (``journal_size_limit``)."""
            db.executescript(_SCHEMA)
        except sqlite3.Error:
            db.close()
            raise
        return db

    # --- fault handling ----------------------------------------------------------------

    def _fault(self, what: str, exc: sqlite3.Error | str) -> StoreError:
        self.errors += 1
        self.last_error = f"{what}: {exc}"
        now = time.monotonic()
        if now - self._logged_at >= _LOG_EVERY:
            more = f" ({self._unlogged} more since the last line)" if self._unlogged else ""
            log.error("disk queue %s: %s failed: %s%s", self.path, what, exc, more)
            self._logged_at = now
            self._unlogged = 0
        else:
            self._unlogged += 1
        return StoreError(f"disk queue unavailable ({exc})")

    def _ok(self) -> None:
        if self.last_error is not None:
            log.info("disk queue %s: writing again", self.path)
            self.last_error = None

    def _refuse(self, what: str, exc: sqlite3.Error | str, nbytes: int = 0) -> StoreError:
        """Record why a write of ``nbytes`` that would grow the queue failed (``/healthz``)."""
        self.refusal = self._cause(exc, nbytes)
        return self._fault(what, exc)

    def _cause(self, exc: sqlite3.Error | str, nbytes: int) -> Refusal:
        """SQLite says "database or disk is full" for both: the cap when the write did
        not fit in the pages the cap leaves, the volume otherwise."""
        free = volume_free(self.path.parent)
        cause = "volume"
        if isinstance(exc, sqlite3.Error):
            cause = "error" if "full" not in str(exc) else "volume"
            if cause == "volume" and self.max_bytes is not None:
                with contextlib.suppress(sqlite3.Error):
                    cap, used, unused = (
                        int(self._db.execute(f"PRAGMA {p}").fetchone()[0])
                        for p in ("max_page_count", "page_count", "freelist_count")
                    )
                    if used - unused + nbytes // self.page_size + 1 >= cap:
                        cause = "cap"
        return Refusal(cause, free, self.reserve.size)

    def _flush_pending(self) -> None:
        """Deletes that failed before (inside the caller's transaction)."""
        if self._pending_inbox:
            self._db.executemany(
                "DELETE FROM inbox WHERE trace_id = ?", ((t,) for t in self._pending_inbox)
            )
        if self._pending_outbox:
            self._db.executemany(
                "DELETE FROM outbox WHERE id = ?", ((i,) for i in self._pending_outbox)
            )

    def _pending_done(self) -> None:
        self._pending_inbox.clear()
        self._pending_outbox.clear()

    def _run_deletes(self) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._flush_pending()

    def _retry_deletes(self) -> bool:
        """Run the pending deletes in a transaction of their own (never with a write that
        may not fit); when the volume is full, free the reserve for them. True when none
        is left pending."""
        if not (self._pending_inbox or self._pending_outbox):
            return True
        try:
            self._run_deletes()
        except sqlite3.Error as exc:
            if not self.reserve.release():
                self._fault("deleting delivered rows (retried before the next write)", exc)
                return False
            log.warning(
                "disk queue %s: deleting delivered rows failed (%s); released the %d-byte "
                "reserve to delete them and shrink the queue",
                self.path,
                exc,
                self.reserve.size,
            )
            try:
                self._run_deletes()
            except sqlite3.Error as again:
                self._fault("deleting delivered rows (retried before the next write)", again)
                return False
        self._pending_done()
        self._ok()
        self._shrink()
        if self.refusal is not None and self.refusal.cause != "error" and self.reserve.present:
            self.refusal = None  # rows were freed and the reserve is in place: try again
        return True

    def wal_bytes(self) -> int:
        """The WAL file's size now."""
        try:
            return Path(f"{self.path}-wal").stat().st_size
        except OSError:
            return 0

    def _shrink(self) -> None:
        """Checkpoint the WAL into the database and truncate it to nothing when it has
        outgrown twice ``wal_limit`` (a transaction larger than the limit, or checkpoints
        that failed; SQLite's own checkpoints keep it near the limit) or the reserve is
        missing, then take the reserve back."""
        if self.reserve.present and self._written < self.wal_limit:
            return  # not enough written since the last look to have outgrown it
        self._written = 0
        if self.reserve.present and self.wal_bytes() <= 2 * self.wal_limit:
            return
        try:
            busy = int(self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])
        except sqlite3.Error as exc:
            self._fault("checkpointing the WAL", exc)
            return
        if not busy and self.reserve.ensure():
            self._ok()

    def _no_room(self) -> str | None:
        """Why a write that grows the queue must not run now, or None: the reserve is not
        in place, so the deletes that come after it might find no room."""
        if self._retry_deletes() and self.reserve.ensure():
            return None
        return (
            f"the volume has {volume_free(self.path.parent)} bytes free and the queue keeps "
            f"{self.reserve.size} in reserve for deleting delivered rows"
        )

    # --- writes ------------------------------------------------------------------------

    def accept(
        self, fragments: Sequence[tuple[bytes, bytes]], rows: Sequence[NewOutRow]
    ) -> list[int]:
        """Persist an accepted request before the receiver acknowledges it: its fresh
        (trace id, fragment) pairs and the payloads it sends straight out (late spans,
        passthrough), in one transaction; returns the outbox ids. ``StoreError`` means
        nothing was written and the request must be refused (``refusal`` says why)."""
        short = self._no_room()
        if short is not None:
            raise self._refuse("accepting a request", short)
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT INTO inbox (trace_id, data) VALUES (?, ?)", fragments)
                ids = self._insert_outbox(rows)
        except sqlite3.Error as exc:
            raise self._refuse("accepting a request", exc, _size(fragments, rows)) from exc
        self._written += _size(fragments, rows)
        self.refusal = None
        self._ok()
        return ids

    def add_inbox(self, fragments: Iterable[tuple[bytes, bytes]]) -> None:
        """Persist (trace id, fragment) pairs (tests and tools; receivers use ``accept``)."""
        self.accept(list(fragments), [])

    def _insert_outbox(self, rows: Iterable[NewOutRow]) -> list[int]:
        ids: list[int] = []
        for row in rows:
            cur = self._db.execute(
                "INSERT INTO outbox (target, data, spans, traces) VALUES (?, ?, ?, ?)", row
            )
            ids.append(int(cur.lastrowid or 0))
        return ids

    def commit_decisions(
        self,
        trace_ids: Sequence[bytes],
        rows: Sequence[NewOutRow],
        decided: Sequence[DecidedRow] = (),
    ) -> list[int]:
        """Move decided traces from inbox to outbox atomically, remembering their
        decisions (so spans arriving after a restart get the same verdict); returns the
        outbox ids. On ``StoreError`` nothing changed: the inbox rows still hold the traces."""
        short = self._no_room()
        if short is not None:
            raise self._fault("committing decisions", short)
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany(
                    "DELETE FROM inbox WHERE trace_id = ?", ((t,) for t in trace_ids)
                )
                ids = self._insert_outbox(rows)
                if decided:
                    self._remember(decided)
        except sqlite3.Error as exc:
            raise self._fault("committing decisions", exc) from exc
        self._written += _size((), rows)
        self._ok()
        return ids

    def _remember(self, decided: Sequence[DecidedRow]) -> None:
        first = self._seq + 1
        self._db.executemany(
            "INSERT OR REPLACE INTO decided (trace_id, verdict, codes, seq) VALUES (?, ?, ?, ?)",
            ((t, v, c, first + n) for n, (t, v, c) in enumerate(decided)),
        )
        self._seq += len(decided)
        if self._seq % 1024 < len(decided):  # prune now and then, not on every commit
            self._db.execute("DELETE FROM decided WHERE seq <= ?", (self._seq - self.decided_keep,))

    def release_inbox(self, trace_ids: Sequence[bytes]) -> None:
        """Forget inbox rows of traces every target now has (their decision commit had
        failed); a failure is remembered and retried with the next write."""
        self._delete(trace_ids, [])

    def delete_outbox(self, ids: Sequence[int]) -> None:
        """Forget payloads a target acknowledged (or refused permanently); a failure is
        remembered and retried with the next write (meanwhile a restart resends them)."""
        self._delete([], ids)

    def _delete(self, trace_ids: Sequence[bytes], ids: Sequence[int]) -> None:
        self._pending_inbox.extend(trace_ids)
        self._pending_outbox.extend(ids)
        self._retry_deletes()

    def quarantine_inbox(self, row_id: int, data: bytes, reason: str) -> Path:
        """Move an inbox row that cannot be replayed to ``quarantine/inbox-<id>.binpb``
        (with the reason beside it in ``.txt``), so it neither blocks start-up nor is lost:
        the file is the fragment as received, for a person to inspect or re-send."""
        folder = self.path.parent / "quarantine"
        make_dir(folder, self.file_mode)
        target = folder / f"inbox-{row_id}.binpb"
        write_new(target, data, self.file_mode)
        write_new(target.with_suffix(".txt"), (reason + "\n").encode("utf-8"), self.file_mode)
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.execute("DELETE FROM inbox WHERE id = ?", (row_id,))
        except sqlite3.Error as exc:
            raise self._fault("removing a quarantined row", exc) from exc
        return target

    def quarantine_fragments(self, trace_id: bytes, fragments: Sequence[bytes]) -> Path:
        """Keep fragments of a trace that could not be decided (``trace-<id>-<n>.binpb``);
        the caller removes them from the inbox with the trace's decision."""
        folder = self.path.parent / "quarantine"
        make_dir(folder, self.file_mode)
        for n, data in enumerate(fragments):
            write_new(folder / f"trace-{trace_id.hex()}-{n}.binpb", data, self.file_mode)
        return folder

    # --- reads -------------------------------------------------------------------------

    def load_inbox(self) -> list[tuple[int, bytes]]:
        """Every undecided fragment with its row id, oldest first."""
        cur = self._db.execute("SELECT id, data FROM inbox ORDER BY id")
        return [(int(i), bytes(d)) for i, d in cur]

    def load_decided(self) -> list[DecidedRow]:
        """The remembered decisions, oldest first (at most ``decided_keep``)."""
        cur = self._db.execute(
            "SELECT trace_id, verdict, codes FROM decided WHERE seq > ? ORDER BY seq",
            (self._seq - self.decided_keep,),
        )
        return [(bytes(t), str(v), str(c)) for t, v, c in cur]

    def load_outbox(self, targets: Sequence[TargetSpec] | None = None) -> list[OutRow]:
        """Every unacknowledged payload, oldest first; with ``targets``, only theirs, each
        row named by its target (rows from before names existed are matched by URL)."""
        if targets is None:
            cur = self._db.execute("SELECT id, target, data, spans, traces FROM outbox ORDER BY id")
            return [(int(i), str(t), bytes(d), int(s), int(n)) for i, t, d, s, n in cur]
        keys = _keys(targets)
        if not keys:
            return []
        marks = ", ".join("?" * len(keys))  # removed targets' rows stay on disk, unread
        cur = self._db.execute(
            "SELECT id, target, data, spans, traces FROM outbox "
            f"WHERE target IN ({marks}) ORDER BY id",
            list(keys),
        )
        return [(int(i), keys[str(t)], bytes(d), int(s), int(n)) for i, t, d, s, n in cur]

    def record_targets(self, targets: Sequence[TargetSpec]) -> None:
        """Remember the configured targets (for ``tracejudge queue``); a failure is logged
        and counted, never fatal: it only makes the offline view older."""
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.execute("UPDATE targets SET configured = 0")
                self._db.executemany(
                    "INSERT INTO targets (name, url, configured) VALUES (?, ?, 1) "
                    "ON CONFLICT(name) DO UPDATE SET url = excluded.url, configured = 1",
                    ((t.name, t.url) for t in targets),
                )
        except sqlite3.Error as exc:
            self._fault("recording the configured targets", exc)

    def recorded_targets(self) -> list[TargetSpec]:
        """The targets configured at the last start, as ``record_targets`` kept them."""
        cur = self._db.execute("SELECT name, url FROM targets WHERE configured = 1 ORDER BY name")
        return [TargetSpec(str(n), str(u)) for n, u in cur]

    def queued_targets(self) -> list[QueuedTarget]:
        """Payloads and spans waiting per target key, with the URL last recorded for it."""
        urls = {str(n): str(u) for n, u in self._db.execute("SELECT name, url FROM targets")}
        cur = self._db.execute(
            "SELECT target, COUNT(*), COALESCE(SUM(spans), 0) FROM outbox "
            "GROUP BY target ORDER BY target"
        )
        return [
            QueuedTarget(str(k), urls.get(str(k), str(k) if "://" in str(k) else None), n, s)
            for k, n, s in cur
        ]

    def removed_targets(self, targets: Sequence[TargetSpec]) -> list[QueuedTarget]:
        """What waits for targets not among ``targets`` (neither by name nor by URL)."""
        keys = _keys(targets)
        return [q for q in self.queued_targets() if q.key not in keys]

    def target_rows(self, key: str, after: int = 0, limit: int = 256) -> list[OutRow]:
        """The next ``limit`` rows of one target key with ids above ``after``, oldest first."""
        cur = self._db.execute(
            "SELECT id, target, data, spans, traces FROM outbox "
            "WHERE target = ? AND id > ? ORDER BY id LIMIT ?",
            (key, after, limit),
        )
        return [(int(i), str(t), bytes(d), int(s), int(n)) for i, t, d, s, n in cur]

    def remove_rows(self, ids: Sequence[int]) -> None:
        """Delete outbox rows now (``StoreError`` on failure; for ``tracejudge queue``)."""
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany("DELETE FROM outbox WHERE id = ?", ((i,) for i in ids))
        except sqlite3.Error as exc:
            raise self._fault("deleting rows", exc) from exc

    def drop_target(self, key: str) -> tuple[int, int]:
        """Delete every row of one target key; (payloads, spans) deleted (``StoreError``)."""
        try:
            with self._db:
                self._db.execute("BEGIN")
                n, spans = self._db.execute(
                    "SELECT COUNT(*), COALESCE(SUM(spans), 0) FROM outbox WHERE target = ?",
                    (key,),
                ).fetchone()
                self._db.execute("DELETE FROM outbox WHERE target = ?", (key,))
        except sqlite3.Error as exc:
            raise self._fault("dropping rows", exc) from exc
        return int(n), int(spans)

    def iter_target_rows(self, key: str, batch: int = 256) -> Iterator[OutRow]:
        """Every row of one target key, oldest first, read ``batch`` at a time."""
        after = 0
        while rows := self.target_rows(key, after, batch):
            yield from rows
            after = rows[-1][0]

    def file_bytes(self) -> int:
        """The database file's size now (the figure ``max_bytes`` caps)."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def close(self) -> None:
        """Retry pending deletes, then close (WAL content is durable). Never raises: a
        shutdown on a full disk must still end cleanly; what could not be written is
        what the next start replays."""
        self._retry_deletes()
        try:
            self._db.close()
        except sqlite3.Error as exc:
            log.error("disk queue %s: closing failed: %s", self.path, exc)


def _size(fragments: Sequence[tuple[bytes, bytes]], rows: Sequence[NewOutRow]) -> int:
    return sum(len(d) for _, d in fragments) + sum(len(r[1]) for r in rows)


def open_for_serve(
    directory: Path, max_bytes: int | None, file_mode: int, decided_keep: int = DECIDED_KEEP
) -> tuple[DiskStore, Room]:
    """The queue ``serve`` uses: capped at ``max_bytes`` or, without it, at a share of its
    volume's free space, with a reserve for deletes (``headroom.py``), remembering the
    newest ``decided_keep`` decisions (``decided_cache_size``)."""
    make_dir(directory, file_mode)
    room = plan_room(directory, max_bytes, DATABASE)
    store = DiskStore(
        directory,
        room.max_bytes,
        reserve_bytes=room.reserve_bytes,
        file_mode=file_mode,
        decided_keep=decided_keep,
    )
    return store, room


def _keys(targets: Sequence[TargetSpec]) -> dict[str, str]:
    """Outbox target key -> target name: each name, and each URL (rows from before names)."""
    keys = {t.url: t.name for t in targets}
    keys.update({t.name: t.name for t in targets})
    return keys
