"""Verdict sinks: where each verdict goes besides the spans (JSON lines, a human line per run,
a webhook, and observers such as the gate's window, which take the verdict object itself).

A sink must never slow the pipeline: the JSON-lines sink writes a batch per decision tick,
and the webhook sink posts from its own bounded queue (dropping, with a count, only when a
dead webhook lets it fill).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from typing import IO, Any, Protocol, runtime_checkable

import aiohttp

from tracejudge.collector.exporters.file_target import open_for_append
from tracejudge.collector.storage.files import DEFAULT_FILE_MODE
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Verdict
from tracejudge.report.records import SHADOW_RECORD, parse_record
from tracejudge.report.text import engine_verdict_line, verdict_line

log = logging.getLogger("tracejudge.collector")


class VerdictSink(Protocol):
    """Receives the JSON form of every verdict, a tick's worth at a time."""

    def emit(self, records: Sequence[dict[str, Any]]) -> None:
        """Take the records; must not block for long or raise."""
        ...

    async def close(self) -> None:
        """Flush and release resources."""
        ...


@runtime_checkable
class VerdictLineSink(VerdictSink, Protocol):
    """A sink that shows verdicts rather than storing their JSON form (``TextSink``): the
    pipeline hands it the verdict objects (``emit_verdicts``) and builds no record for it;
    other records (shadow pairing reports) still come through ``emit``."""

    def emit_verdicts(self, verdicts: Sequence[Verdict]) -> None:
        """Take a chunk's decided verdicts; must not block for long or raise."""
        ...


class VerdictObserver(Protocol):
    """Receives each decided verdict as an object (no JSON built), with the Unix time it
    was decided: the gate's window of recent runs (``tracejudge.gate.RecentVerdicts``)."""

    def add(self, v: Verdict, time: float) -> None:
        """Take one verdict; must be cheap and must not raise."""
        ...


class JsonlSink:
    """One JSON object per line to a file (appended) or to stdout (``-``)."""

    def __init__(self, target: str, file_mode: int = DEFAULT_FILE_MODE) -> None:
        self._own = target != "-"
        self._fh: IO[str] = (
            open_for_append(target, "verdicts_jsonl", file_mode) if self._own else sys.stdout
        )

    def emit(self, records: Sequence[dict[str, Any]]) -> None:
        """Write and flush the lines (a reader tailing the file sees whole lines)."""
        if not records:
            return
        try:
            self._fh.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
            self._fh.flush()
        except OSError:
            log.exception("writing verdict lines failed")

    async def close(self) -> None:
        """Close the file (stdout stays open)."""
        if self._own:
            self._fh.close()


class TextSink:
    """One human line per judged run on stdout (``serve`` with a backend or ``--output``):
    what happened without reading JSON. Shadow pairing reports get a short line too."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._out = sys.stdout if stream is None else stream

    def emit(self, records: Sequence[dict[str, Any]]) -> None:
        """Write and flush one line per record (a verdict's JSON form, or a shadow pairing
        report)."""
        lines = []
        for r in records:
            if r.get("record") == SHADOW_RECORD:
                lines.append(f"shadow pairing: {r.get('outcome')} (request {r.get('request_id')})")
                continue
            try:
                lines.append(verdict_line(parse_record(r, "verdict")))
            except ValueError:
                log.exception("a verdict could not be shown as a line")
        self._write(lines)

    def emit_verdicts(self, verdicts: Sequence[Verdict]) -> None:
        """Write and flush one line per verdict (the line ``emit`` writes for its record)."""
        lines = []
        for v in verdicts:
            try:
                lines.append(engine_verdict_line(v))
            except Exception:  # telemetry never raises into the collector
                log.exception("a verdict could not be shown as a line")
        self._write(lines)

    def _write(self, lines: Sequence[str]) -> None:
        if not lines:
            return
        try:
            self._out.write("".join(line + "\n" for line in lines))
            self._out.flush()
        except OSError:
            log.exception("writing verdict lines failed")

    async def close(self) -> None:
        """Nothing to release (stdout stays open)."""


class WebhookSink:
    """POST each verdict as JSON, with retries, from a bounded background queue."""

    def __init__(self, url: str, stats: Stats, *, max_pending: int = 10_000) -> None:
        self.url = url
        self.stats = stats
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(max_pending)
        self._task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None

    def emit(self, records: Sequence[dict[str, Any]]) -> None:
        """Queue the records; when the queue is full the record is dropped and counted."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        for r in records:
            try:
                self._queue.put_nowait(r)
            except asyncio.QueueFull:
                self.stats.webhook_dropped += 1

    async def _post(self, record: dict[str, Any]) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        delay = 0.2
        for attempt in range(5):
            try:
                async with self._session.post(self.url, json=record) as resp:
                    if resp.status < 300:
                        return
                    if resp.status < 500 and resp.status != 429:
                        log.warning("webhook refused a verdict: HTTP %d", resp.status)
                        return
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                log.debug("webhook attempt %d failed: %s", attempt + 1, exc)
            await asyncio.sleep(delay)
            delay *= 2
        self.stats.webhook_dropped += 1
        log.warning("webhook gave up on a verdict after retries")

    async def _run(self) -> None:
        while True:
            record = await self._queue.get()
            try:
                await self._post(record)
            finally:
                self._queue.task_done()

    async def close(self) -> None:
        """Give pending posts a few seconds, then stop."""
        if self._task is not None:
            try:
                await asyncio.wait_for(self._queue.join(), 5.0)
            except TimeoutError:
                log.warning("webhook: %d verdicts not sent at shutdown", self._queue.qsize())
            self._task.cancel()
        if self._session is not None:
            await self._session.close()
