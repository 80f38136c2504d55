"""What the decoding thread costs a request: CPU per request of the receivers' decode and
split (``receivers.http_receiver.decode`` over ``codec.otlp.split_body``) run on the event
loop against the same work handed to the decoding thread, by request size.

Why: the receivers decode a body up to ``INLINE_DECODE_BYTES`` on the loop and a larger one
on a decoding thread, so a large request never holds ``/healthz`` and the other clients.
The hand-over is not free: the loop submits to the executor, the thread takes the GIL, and
its result comes back through the loop's self-pipe. This prints both per request size, in
CPU time of this process pinned to one core (as ``bench_collector.py`` pins the collector),
so the threshold can be set where the hand-over is small next to the decode itself.

The requests are made by the real OTel SDK and encoder (``bench_decode.make_spans``):
traces of 10 agent-shaped spans, about 7.5 KiB each on the wire.

Run: ``.venv-compiled/bin/python bench/bench_decode_handoff.py [--traces 10 30 100 300]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from bench_decode import make_spans
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tracejudge._build import build_kind
from tracejudge.collector.codec.otlp import split_body
from tracejudge.collector.receivers.http_receiver import INLINE_DECODE_BYTES


def body_of(traces: int) -> bytes:
    """An ``ExportTraceServiceRequest`` of ``traces`` 10-span traces, serialized."""
    return encode_spans(make_spans(traces * 10)).SerializeToString()


async def per_request(body: bytes, on_thread: bool, n: int) -> float:
    """CPU microseconds per request of ``n`` decodes of ``body``, on the loop or handed to
    the default executor and awaited (what ``decode`` does above the threshold)."""
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, split_body, body)  # the thread exists before timing
    t0 = time.process_time()
    for _ in range(n):
        if on_thread:
            await loop.run_in_executor(None, split_body, body)
        else:
            split_body(body)
    return (time.process_time() - t0) / n * 1e6


async def measure(sizes: list[int], rounds: int, budget_s: float) -> None:
    print(f"build: {build_kind()}; INLINE_DECODE_BYTES = {INLINE_DECODE_BYTES // 1024} KiB")
    print(
        "| traces | KiB | on the loop, µs | on the thread, µs | hand-over, µs "
        "| hand-over ÷ decode |"
    )
    print("|---|---|---|---|---|---|")
    for traces in sizes:
        body = body_of(traces)
        probe = await per_request(body, False, 5)
        n = max(5, int(budget_s * 1e6 / probe))
        loop_us = min([await per_request(body, False, n) for _ in range(rounds)])
        thread_us = min([await per_request(body, True, n) for _ in range(rounds)])
        extra = thread_us - loop_us
        print(
            f"| {traces} | {len(body) // 1024} | {loop_us:.0f} | {thread_us:.0f} | {extra:.0f} "
            f"| {extra / loop_us:.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, nargs="+", default=[10, 30, 100, 300])
    parser.add_argument("--rounds", type=int, default=3, help="best of this many")
    parser.add_argument("--seconds", type=float, default=0.5, help="CPU time per round")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    asyncio.run(measure(args.traces, args.rounds, args.seconds))


if __name__ == "__main__":
    main()
