"""Is the collector responsive while an expensive rules file judges? /healthz under load.

Starts an in-process collector whose rules are ``--rules-count`` copies of a CEL rule with
two nested macros (a valid file; each evaluation runs up to CEL's iteration budget over a
run of ``--tools`` tool calls), sends one such agent trace over OTLP/HTTP and polls
``/healthz`` over loopback while it is judged. Prints the judging time of the trace and
the /healthz answer times (p50, max), with judging on the worker thread (what ships) and,
with ``--inline``, on the event loop (how it was before), for comparison. Also prints what a
process pool would add per trace: pickling the trace's fragments out and its outcome back.

Run: ``.venv/bin/python bench/bench_judging.py [--rules-count 150] [--tools 98] [--inline]``.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import pickle
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.collector.collector_support import make_request, make_span  # noqa: E402
from tracejudge import semconv as sc  # noqa: E402
from tracejudge.collector import Collector, CollectorConfig  # noqa: E402
from tracejudge.collector.processors.worker import BatchJob  # noqa: E402

HEAVY = "run.tools.map(t, run.tools.filter(u, u.name + t.name == 'x').size()).size() > 0"


class InlineWorker:
    """Runs a batch on the event loop itself: the collector before judging moved off it."""

    on_thread = False
    moves = 0

    def observe(self, seconds: float, spans: int = 1) -> None:
        """Stays on the loop whatever a trace cost."""

    def start(self, job: BatchJob[Any, Any], spans: int = 0) -> None:
        """Judge everything now, on the loop."""
        job.run()

    def close(self) -> None:
        """Nothing to stop."""


def trace(tools: int) -> bytes:
    """One agent run with ``tools`` tool calls, serialized."""
    tid, rid = os.urandom(16), os.urandom(8)
    root = make_span(
        tid,
        rid,
        name="invoke_agent support",
        attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "support"},
    )
    spans = [root]
    for i in range(tools):
        attrs = {sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: f"t{i % 7}"}
        spans.append(make_span(tid, parent=rid, name="execute_tool", attributes=attrs))
    return make_request(spans).SerializeToString()


def request(port: int, method: str, path: str, body: bytes = b"") -> float:
    """Seconds one HTTP request took to be answered."""
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/x-protobuf"})
        conn.getresponse().read()
    finally:
        conn.close()
    return time.perf_counter() - began


def main() -> int:
    """Measure and print one JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules-count", type=int, default=150)
    ap.add_argument("--tools", type=int, default=98)
    ap.add_argument("--inline", action="store_true", help="judge on the event loop")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules.yaml"
        lines = ["version: 1", "rules:"]
        for i in range(args.rules_count):
            lines += [f"  - id: heavy-{i}", "    layer: policy", "    check:", "      type: cel"]
            lines += [f'      expr: "{HEAVY} || {i} < 0"']
        rules.write_text("\n".join(lines) + "\n")
        cfg = CollectorConfig(
            rules=rules, grpc_port=0, http_port=0, decision_wait_after_root=0.05, max_rule_cost=0
        ).validate()
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True).start()
        collector = Collector(cfg)

        def run(coro: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(coro, loop).result(120)

        run(collector.start())
        assert collector.decision is not None
        if args.inline:
            collector.decision.worker = InlineWorker()  # type: ignore[assignment]
        body = trace(args.tools)
        request(collector.http_port, "POST", "/v1/traces", body)
        waits: list[float] = []
        while collector.stats.traces_decided == 0:
            waits.append(request(collector.http_port, "GET", "/healthz"))
            time.sleep(0.01)
        judged = collector.decision.cost.slowest
        # What a process pool would move per trace: the fragments out, the outcome back.
        outcome_probe = _outcome(collector, body)
        began = time.perf_counter()
        for _ in range(20):
            pickle.loads(pickle.dumps(outcome_probe))
        pickle_us = (time.perf_counter() - began) / 20 * 1e6
        run(collector.stop())
    print(
        json.dumps(
            {
                "judging": "event loop" if args.inline else "worker thread",
                "rules": args.rules_count,
                "tools": args.tools,
                "judge_s_per_trace": round(judged, 3),
                "healthz_polls": len(waits),
                "healthz_p50_ms": round(statistics.median(waits) * 1000, 1),
                "healthz_max_ms": round(max(waits) * 1000, 1),
                "process_pool_pickle_us_per_trace": round(pickle_us, 1),
            }
        )
    )
    return 0


def _outcome(collector: Collector, body: bytes) -> Any:
    """The outcome the worker produced for a trace like ``body`` (judged again here)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from tracejudge.collector.processors.buffer import PendingTrace

    assert collector.decision is not None
    req = ExportTraceServiceRequest.FromString(body)
    frags = [rs.SerializeToString() for rs in req.resource_spans]
    t = PendingTrace(req.resource_spans[0].scope_spans[0].spans[0].trace_id, 0, 0, 0, frags)
    return (frags, collector.decision.decider.decide(t))


if __name__ == "__main__":
    raise SystemExit(main())
