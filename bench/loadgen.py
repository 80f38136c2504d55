"""OTLP load generator for the collector benchmark (runs as its own process).

Sends agent traces copied from recorded templates (real OTLP/JSON recordings of the refund
agent), each copy with a fresh trace id, over loopback OTLP/gRPC or OTLP/HTTP protobuf.
Copies are made by replacing the template's trace-id bytes in its serialized form, so the
generator costs almost nothing per span and the collector is what gets measured.

Run: ``python bench/loadgen.py --target grpc://127.0.0.1:4317 --template t.json
[--seconds 10] [--rate SPANS_PER_S] [--traces-per-request 50] [--concurrency 4]
[--traces N]``. Prints one JSON line with what was sent, refused and failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import grpc
import grpc.aio

from tracejudge.collector.codec.otlp import frame
from tracejudge.otlp.json_traces import json_to_proto

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


class Template:
    """One recorded trace, serialized per ResourceSpans, with its trace id to replace."""

    def __init__(self, path: Path) -> None:
        request = json_to_proto(json.loads(path.read_text()))
        self.fragments = [rs.SerializeToString() for rs in request.resource_spans]
        first = request.resource_spans[0].scope_spans[0].spans[0]
        self.trace_id = first.trace_id
        self.spans = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)

    def copy(self) -> bytes:
        """A framed copy with a fresh random trace id."""
        new = os.urandom(16)
        return b"".join(frame(f.replace(self.trace_id, new)) for f in self.fragments)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Send until ``seconds`` pass (or ``traces`` are sent); count outcomes."""
    templates = [Template(Path(p)) for p in args.template]
    target = urlsplit(args.target)
    stats: dict[str, Any] = {
        "sent_spans": 0,
        "sent_traces": 0,
        "wire_bytes": 0,
        "requests": 0,
        "throttled": 0,
        "errors": 0,
        "unsent_traces": 0,
    }
    per_request_spans = sum(
        templates[i % len(templates)].spans for i in range(args.traces_per_request)
    )
    interval = per_request_spans / args.rate if args.rate else 0.0
    start = time.monotonic()
    end = start + args.seconds
    next_slot = start
    budget = args.traces if args.traces else None
    lock = asyncio.Lock()

    def make() -> tuple[bytes, int, int]:
        parts = []
        spans = 0
        for i in range(args.traces_per_request):
            t = templates[i % len(templates)]
            parts.append(t.copy())
            spans += t.spans
        return b"".join(parts), spans, args.traces_per_request

    if target.scheme == "grpc":
        channel = grpc.aio.insecure_channel(
            f"{target.hostname}:{target.port}",
            options=[("grpc.max_send_message_length", 64 * 1024 * 1024)],
        )
        call = channel.unary_unary(EXPORT, None, None)

        async def send(body: bytes) -> str:
            try:
                await call(body, timeout=30)
                return "ok"
            except grpc.aio.AioRpcError as exc:
                if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED):
                    return "throttled"
                return "error"
    else:
        session = aiohttp.ClientSession()
        url = f"http://{target.hostname}:{target.port}/v1/traces"

        async def send(body: bytes) -> str:
            try:
                async with session.post(
                    url, data=body, headers={"Content-Type": "application/x-protobuf"}
                ) as resp:
                    await resp.read()
                    if resp.status == 200:
                        return "ok"
                    return "throttled" if resp.status in (429, 503) else "error"
            except aiohttp.ClientError:
                return "error"

    async def worker() -> None:
        nonlocal next_slot, budget
        while time.monotonic() < end:
            async with lock:
                if budget is not None:
                    if budget <= 0:
                        return
                    budget -= args.traces_per_request
                if interval:
                    now = time.monotonic()
                    next_slot = max(next_slot + interval, now)
                    wait = next_slot - now
                else:
                    wait = 0.0
            if wait:
                await asyncio.sleep(wait)
            body, spans, traces = make()
            while True:
                outcome = await send(body)
                stats["requests"] += 1
                if outcome == "ok":
                    stats["sent_spans"] += spans
                    stats["sent_traces"] += traces
                    stats["wire_bytes"] += len(body)
                    break
                stats["errors" if outcome == "error" else outcome] += 1
                if outcome == "error":
                    break
                if time.monotonic() >= end:
                    stats["unsent_traces"] += traces  # still refused when time was up
                    break
                await asyncio.sleep(0.01)

    await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    stats["seconds"] = round(time.monotonic() - start, 3)
    if target.scheme == "grpc":
        await channel.close(None)
    else:
        await session.close()
    return stats


def main() -> None:
    """Parse flags, run, print the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--template", action="append", required=True)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=0.0, help="spans/s (0 = as fast as it can)")
    parser.add_argument("--traces-per-request", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--traces", type=int, default=0, help="stop after this many traces")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args))), flush=True)


if __name__ == "__main__":
    main()
