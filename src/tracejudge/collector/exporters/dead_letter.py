"""The dead-letter file: batches a backend refused for good (``serve --dead-letter FILE``).

A permanent refusal (HTTP 400/413, gRPC ``INVALID_ARGUMENT``...) cannot be retried without
wedging the queue, so without this file the batch is dropped and counted. With it, each
refused batch is one line of OTLP/JSON (the layout of ``--output``, so ``tracejudge eval``
reads the file as it is, and a line can be POSTed back to an OTLP/HTTP receiver: OTLP/JSON
decoders ignore unknown keys) with a ``deadLetter`` object beside ``resourceSpans``: the target's
name and URL, the status, the backend's reason, the time and the span count.

What is written is what would have been forwarded (already stamped, content dropped and
attributes redacted as configured); the reason, a backend's own text that may quote what
it was sent, is scrubbed like every other text the collector writes. A file that
cannot be opened at start stops the start, as ``--output`` does; a later write failure
(disk full, file removed) never reaches the forwarder: it is logged once per outage,
counted, and the batch is dropped and counted as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from tracejudge.collector.exporters.file_target import open_for_append
from tracejudge.collector.storage.files import DEFAULT_FILE_MODE, open_append
from tracejudge.otlp.json_encode import request_to_otlp_json

log = logging.getLogger("tracejudge.collector")

DEAD_LETTER_KEY = "deadLetter"
"""The key beside ``resourceSpans`` that says why the batch is here."""


class DeadLetterFile:
    """Appends refused batches to ``path``, one flushed and fsynced line each."""

    def __init__(
        self,
        path: Path,
        scrub: Callable[[str], str] = lambda s: s,
        file_mode: int = DEFAULT_FILE_MODE,
    ) -> None:
        self.path = path
        self.file_mode = file_mode
        self.scrub = scrub
        """Scrubs the backend's reason text (the collector gives it its scrubber's ``text``)."""
        # Opened now: a file that cannot be written fails the start (``ConfigError`` naming
        # the key), not the first refusal.
        self._fh: IO[bytes] | None = open_for_append(path, "dead_letter", file_mode, binary=True)
        self._lock = threading.Lock()
        self.written = 0
        """Batches written."""
        self.errors = 0
        """Batches that could not be written (each dropped and counted as ``dropped``)."""
        self.last_error: str | None = None
        """The latest write failure, cleared by the next successful write."""

    async def write(
        self, name: str, url: str, status: str, reason: str, payload: bytes, spans: int
    ) -> bool:
        """Append one refused batch; False (logged once per outage, counted) if it could not
        be written. Never raises: the forwarder goes on either way."""
        try:
            doc = request_to_otlp_json(payload)
            doc[DEAD_LETTER_KEY] = {
                "target": name,
                "url": url,
                "status": status,
                "reason": self.scrub(reason),
                "time_unix": round(time.time(), 3),
                "spans": spans,
            }
            line = json.dumps(doc, separators=(",", ":")) + "\n"
            await asyncio.to_thread(self._append, line)
        except Exception as exc:  # a full disk, a removed directory, an undecodable batch
            self.errors += 1
            if self.last_error is None:
                log.error(
                    "dead-letter file %s: cannot write (%s: %s); refused batches are dropped "
                    "and counted until it can be written again",
                    self.path,
                    type(exc).__name__,
                    exc,
                )
            self.last_error = f"{type(exc).__name__}: {exc}"
            return False
        self.written += 1
        if self.last_error is not None:
            log.info("dead-letter file %s: writing again", self.path)
            self.last_error = None
        return True

    def _append(self, line: str) -> None:
        with self._lock:  # targets' workers write from threads of their own
            start = None
            try:
                if self._fh is None:
                    self._fh = open_append(self.path, self.file_mode, binary=True)
                start = self._fh.seek(0, os.SEEK_END)
                self._fh.write(line.encode("utf-8"))
                self._fh.flush()
                # Durable before the disk queue forgets the rows (a crash must not lose both).
                os.fsync(self._fh.fileno())
            except OSError:
                self._reset()
                if start is not None:  # no half line for the next one to be glued to
                    with contextlib.suppress(OSError):
                        os.truncate(self.path, start)
                raise

    def _reset(self) -> None:
        """Drop a handle that failed (a half-written line stays; the next opens afresh)."""
        fh, self._fh = self._fh, None
        if fh is not None:
            with contextlib.suppress(OSError):
                fh.close()

    def snapshot(self) -> dict[str, Any]:
        """The ``/metrics`` entry."""
        return {
            "path": str(self.path),
            "written": self.written,
            "errors": self.errors,
            "last_error": self.last_error,
        }

    def close(self) -> None:
        """Close the file (never raises)."""
        with self._lock:
            self._reset()
