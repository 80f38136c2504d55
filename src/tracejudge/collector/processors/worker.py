"""The judging thread: where the CPU-bound part of each decision runs, off the event loop.

A rules file can cost seconds per run (1,000 CEL rules: ~2.7 s), and judged on the event
loop that stalled every receiver and ``/healthz`` for as long. Judging runs here instead:
the thread judges a batch of due traces one after another and hands the outcomes to the
loop a chunk at a time, without waiting for the loop to settle one chunk before judging
the next (under a burst the loop is busy with requests, and a round trip per chunk left
the thread idle most of the time). It may run ``lead`` chunks ahead of the loop, no more,
so judged-but-unsettled payloads stay bounded.

Why one thread and not a process pool (measured, docs/performance.md): cel-cpp holds the
GIL while it evaluates, but each evaluation is bounded by CEL's iteration budget (a few ms
at most), and CPython hands the GIL to a waiting thread every switch interval, so the loop
still answers ``/healthz`` within milliseconds while a slow trace is judged. A process
pool would judge on another core, but every trace would cross a pipe twice (its fragments
out, its stamped payloads and verdicts back), the judge handed to ``Collector`` would have
to be picklable, and the one-core figures of ``bench/bench_collector.py`` would no longer
be one core. One thread also keeps decisions in deadline order.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

log = logging.getLogger("tracejudge.collector")

A = TypeVar("A")
R = TypeVar("R")


class BatchJob(Generic[A, R]):
    """One batch being judged: the thread's side (``run``) and the loop's (``next``)."""

    def __init__(self, fn: Callable[[A], R], items: Sequence[A], chunk: int, lead: int) -> None:
        self._fn = fn
        self._items = items
        self._chunk = chunk
        self._room = threading.Semaphore(lead)
        self._stop = threading.Event()
        self._loop = asyncio.get_running_loop()
        self._ready: asyncio.Queue[list[R]] = asyncio.Queue()
        self.done: Future[None] | None = None
        self.on_loop = False
        """Set by ``LoopJudging``: ``next`` judges the next chunk itself, on the loop."""
        self._pos = 0

    def run(self) -> None:
        """On the thread: ``fn`` over the items, posting each chunk's results to the loop.
        Should ``fn`` raise (it is meant to return its errors), an empty chunk tells the
        loop that no more results will come."""
        try:
            for start in range(0, len(self._items), self._chunk):
                while not self._room.acquire(timeout=0.5):
                    if self._stop.is_set():
                        return
                if self._stop.is_set():
                    return
                out = [self._fn(x) for x in self._items[start : start + self._chunk]]
                self._loop.call_soon_threadsafe(self._ready.put_nowait, out)
        except BaseException:
            log.exception(
                "judging thread failed; the batch's undecided traces go back to the buffer"
            )
            self._loop.call_soon_threadsafe(self._ready.put_nowait, [])
            raise

    async def next(self) -> list[R]:
        """The next chunk's results, in order (the thread may judge ahead meanwhile; on the
        loop, the receivers get their turn before each chunk is judged)."""
        if self.on_loop:
            await asyncio.sleep(0)
            if self._stop.is_set() or self._pos >= len(self._items):
                return []
            chunk = self._items[self._pos : self._pos + self._chunk]
            self._pos += len(chunk)
            return [self._fn(x) for x in chunk]
        out = await self._ready.get()
        self._room.release()
        return out

    def stop(self) -> None:
        """No more chunks: the thread ends after the item it is on."""
        self._stop.set()
        self._room.release()


class JudgeWorker:
    """One worker thread, started on first use.

    Used when judging can stall the loop: a rules file measured at load as costlier than
    ``AdaptiveJudging.loop_limit`` per run, or a live run that took longer."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None

    def start(self, job: BatchJob[A, R]) -> None:
        """Run ``job`` on the judging thread (its results arrive through ``job.next``)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="tracejudge-judge")
        job.done = self._pool.submit(job.run)

    def close(self) -> None:
        """Let the thread end (what it is running finishes; nothing new starts)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None


class AdaptiveJudging:
    """Where batches are judged: on the worker thread until judging has shown itself cheap,
    then on the event loop, and back on the thread as soon as one trace is not.

    Measured (bench/bench_collector.py, docs/performance.md): for rules that judge a trace
    in well under a millisecond, the thread costs more than it saves. The loop and the
    thread contend for the GIL (each C call that releases it, re2's matcher or protobuf's,
    waits up to a switch interval to get it back) and every chunk crosses threads through
    the loop's self-pipe, so a 10-span trace took ~50% more collector CPU. The decision is
    made on live traces, not on the rules' cost at load: a synthetic 10-span run can cost
    3 ms for rules that take a second on a 100-tool trace. Judging starts on the thread;
    after ``settle_runs`` traces in a row each judged in under ``cheap`` it moves to the
    loop (a chunk of such traces stalls the receivers for a few milliseconds); one trace
    slower than ``loop_limit`` moves it back (that trace was judged on the loop: the price
    of measuring instead of guessing, paid once per switch, logged).

    On the loop, a batch holding a trace larger than the cheap ones is still judged on the
    thread: judging time grows with spans, and one request can bring a 20,000-span trace
    after thousands of 10-span ones (it held the loop, /healthz and both receivers for
    seconds). A trace is judged on the loop only when its spans times the highest cost
    per span seen since judging moved there (a trace's time over its spans, an
    overestimate for small traces) stays within ``loop_limit``.
    """

    def __init__(self, cheap: float, loop_limit: float, settle_runs: int = 64) -> None:
        self.cheap = cheap
        self.loop_limit = loop_limit
        self.settle_runs = settle_runs
        self.on_thread = True
        self.moves = 0
        """Times judging moved between the thread and the loop (``/metrics`` ``judging``)."""
        self._cheap_in_a_row = 0
        self._per_span = 0.0
        """Highest judging time per span of the cheap streak and of the traces judged on
        the loop since (what a trace's size is weighed with)."""
        self._thread = JudgeWorker()

    def start(self, job: BatchJob[A, R], spans: int = 0) -> None:
        """Judge ``job`` on the thread, or let it judge itself chunk by chunk on the loop.
        ``spans``: its largest trace's; a batch expected to cost more than ``loop_limit``
        for one trace goes to the thread whatever the state."""
        if self.on_thread or spans * self._per_span > self.loop_limit:
            self._thread.start(job)
        else:
            job.on_loop = True

    def observe(self, seconds: float, spans: int = 1) -> None:
        """One trace's judging time (``spans``: its size)."""
        per_span = seconds / max(1, spans)
        if not self.on_thread:
            if spans * self._per_span > self.loop_limit:
                return  # too big for the loop: judged on the thread, as expected
            self._per_span = max(self._per_span, per_span)
            if seconds > self.loop_limit:
                self.on_thread = True
                self.moves += 1
                self._cheap_in_a_row = 0
                self._per_span = 0.0
                log.info(
                    "judging a trace took %.1f ms: judging moves off the event loop to the "
                    "worker thread",
                    seconds * 1000,
                )
            return
        if seconds < self.cheap:
            self._cheap_in_a_row += 1
            self._per_span = max(self._per_span, per_span)
        else:
            self._cheap_in_a_row = 0
            self._per_span = 0.0
        if self._cheap_in_a_row >= self.settle_runs:
            self.on_thread = False
            self.moves += 1
            self._cheap_in_a_row = 0

    def close(self) -> None:
        """Stop the thread, if it ever started."""
        self._thread.close()
