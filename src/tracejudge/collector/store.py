"""Optional disk queue (SQLite in WAL mode) so no accepted span is lost to a crash.

Two tables: ``inbox`` holds every accepted fragment until its trace is decided; ``outbox``
holds every stamped payload until its target acknowledges it. A decision moves a trace
from inbox to outbox in one transaction, so after a crash (even SIGKILL) the restart
replays inbox fragments into the buffer and outbox payloads into the forward queues.
Spans may then be delivered twice (at-least-once), never zero times.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS inbox (
  id INTEGER PRIMARY KEY, trace_id BLOB NOT NULL, data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS inbox_trace ON inbox(trace_id);
CREATE TABLE IF NOT EXISTS outbox (
  id INTEGER PRIMARY KEY, target TEXT NOT NULL, data BLOB NOT NULL,
  spans INTEGER NOT NULL, traces INTEGER NOT NULL
);
"""

OutRow = tuple[int, str, bytes, int, int]
"""(row id, target URL, framed payload, span count, trace count)."""


class DiskStore:
    """The inbox/outbox database in ``directory/queue.sqlite3``."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "queue.sqlite3"
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def add_inbox(self, fragments: Iterable[tuple[bytes, bytes]]) -> None:
        """Persist accepted (trace id, fragment) pairs before the receiver acknowledges."""
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT INTO inbox (trace_id, data) VALUES (?, ?)", fragments)

    def add_outbox(self, rows: Iterable[tuple[str, bytes, int, int]]) -> list[int]:
        """Persist payloads to forward; returns their row ids in order."""
        ids: list[int] = []
        with self._db:
            self._db.execute("BEGIN")
            for row in rows:
                cur = self._db.execute(
                    "INSERT INTO outbox (target, data, spans, traces) VALUES (?, ?, ?, ?)", row
                )
                ids.append(int(cur.lastrowid or 0))
        return ids

    def commit_decisions(
        self, trace_ids: Iterable[bytes], rows: Iterable[tuple[str, bytes, int, int]]
    ) -> list[int]:
        """Move decided traces from inbox to outbox atomically; returns the outbox ids."""
        ids: list[int] = []
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM inbox WHERE trace_id = ?", ((t,) for t in trace_ids))
            for row in rows:
                cur = self._db.execute(
                    "INSERT INTO outbox (target, data, spans, traces) VALUES (?, ?, ?, ?)", row
                )
                ids.append(int(cur.lastrowid or 0))
        return ids

    def delete_outbox(self, ids: Iterable[int]) -> None:
        """Forget payloads a target acknowledged (or refused permanently)."""
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM outbox WHERE id = ?", ((i,) for i in ids))

    def load_inbox(self) -> list[tuple[int, bytes]]:
        """Every undecided fragment with its row id, oldest first."""
        cur = self._db.execute("SELECT id, data FROM inbox ORDER BY id")
        return [(int(i), bytes(d)) for i, d in cur]

    def quarantine_inbox(self, row_id: int, data: bytes, reason: str) -> Path:
        """Move an inbox row that cannot be replayed to ``quarantine/inbox-<id>.binpb``
        (with the reason beside it in ``.txt``), so it neither blocks start-up nor is lost:
        the file is the fragment as received, for a person to inspect or re-send."""
        folder = self.path.parent / "quarantine"
        folder.mkdir(exist_ok=True)
        target = folder / f"inbox-{row_id}.binpb"
        target.write_bytes(data)
        target.with_suffix(".txt").write_text(reason + "\n", encoding="utf-8")
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute("DELETE FROM inbox WHERE id = ?", (row_id,))
        return target

    def load_outbox(self) -> list[OutRow]:
        """Every unacknowledged payload, oldest first."""
        cur = self._db.execute("SELECT id, target, data, spans, traces FROM outbox ORDER BY id")
        return [(int(i), str(t), bytes(d), int(s), int(n)) for i, t, d, s, n in cur]

    def quarantine_fragments(self, trace_id: bytes, fragments: Sequence[bytes]) -> Path:
        """Keep fragments of a trace that could not be decided (``trace-<id>-<n>.binpb``);
        the caller removes them from the inbox with the trace's decision."""
        folder = self.path.parent / "quarantine"
        folder.mkdir(exist_ok=True)
        for n, data in enumerate(fragments):
            (folder / f"trace-{trace_id.hex()}-{n}.binpb").write_bytes(data)
        return folder

    def close(self) -> None:
        """Close the database (WAL content is durable)."""
        self._db.close()
