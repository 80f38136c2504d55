"""Judging time of one very large trace, by shape and size: does it grow linearly?

Why: one OTLP request can carry a whole trace of tens of thousands of spans, and judging
such a trace used to grow quadratically with its spans (issue 18: 4.2 s at 20,000 spans,
16.3 s at 40,000), which on the event loop froze every client for as long. Each shape is
judged with the rules the package ships (the refund demo's) at every size, one trace at a
time, and the time per span is printed: flat when judging is linear.

Shapes: ``orphans`` (spans whose parent never arrives, the probe's trace), ``tools``
(an agent run of N tool calls), ``chain`` (each span the child of the previous one).

Run: ``.venv/bin/python bench/bench_big_trace.py [--spans 10000,20000,40000]
[--shapes orphans,tools,chain]``; prints one JSON line per shape.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.collector.collector_support import make_request, make_span  # noqa: E402
from tracejudge import semconv as sc  # noqa: E402
from tracejudge._build import build_kind  # noqa: E402
from tracejudge.collector.codec.otlp import to_records  # noqa: E402
from tracejudge.collector.processors.judge import load_judge  # noqa: E402
from tracejudge.demo.paths import default_rules  # noqa: E402
from tracejudge.model.spans import SpanRecord  # noqa: E402


def big_trace(shape: str, n: int) -> list[SpanRecord]:
    """One trace of an agent root span and ``n`` more spans of ``shape``, decoded."""
    tid, rid = os.urandom(16), os.urandom(8)
    agent = {sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "support"}
    spans = [make_span(tid, rid, name="invoke_agent support", attributes=agent)]
    parent = rid
    for i in range(n):
        if shape == "orphans":
            spans.append(make_span(tid, parent=os.urandom(8), name="step"))
        elif shape == "tools":
            tool = {sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: f"t{i % 7}"}
            spans.append(make_span(tid, parent=rid, name="execute_tool", attributes=tool))
        elif shape == "chain":
            sid = os.urandom(8)
            spans.append(make_span(tid, sid, parent=parent, name="step"))
            parent = sid
        else:
            raise SystemExit(f"unknown shape {shape!r}")
    return to_records(make_request(spans).resource_spans)


def main() -> int:
    """Judge each shape at each size; print seconds and microseconds per span."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spans", default="10000,20000,40000")
    ap.add_argument("--shapes", default="orphans,tools,chain")
    args = ap.parse_args()
    judge = load_judge(default_rules())
    sizes = [int(s) for s in args.spans.split(",")]
    for shape in args.shapes.split(","):
        seconds: list[float] = []
        for n in sizes:
            records = big_trace(shape, n)
            began = time.process_time()
            judge.judge_spans(records)
            seconds.append(time.process_time() - began)
        print(
            json.dumps(
                {
                    "build": build_kind(),
                    "shape": shape,
                    "spans": sizes,
                    "judge_s": [round(s, 2) for s in seconds],
                    "us_per_span": [
                        round(s / n * 1e6, 1) for s, n in zip(seconds, sizes, strict=True)
                    ],
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
