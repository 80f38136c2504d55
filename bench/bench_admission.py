"""Micro-benchmark of admission: CPU microseconds per request the receivers' loop spends in
``admit`` (refusal checks, late-span lookup, persistence hand-off, the hold's buffering).

Why: every request the collector accepts passes here on the event loop, after the split
(which runs on a decoding thread and is not timed). Requests are pre-split, one trace of
``--spans`` spans each, every trace new, into a fresh stage per round (no judging: the
timer never runs). The best round counts; CPU time, so the figure holds on a busy machine.

Run: ``.venv/bin/python bench/bench_admission.py [--requests N] [--spans S] [--rounds R]``.
To compare another tree, run it with that tree's ``src`` on ``PYTHONPATH``; a tree from
before admission was a stage of its own (issue 20) admits through ``Pipeline.admit``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

from tracejudge._build import build_kind
from tracejudge.collector import CollectorConfig
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.codec.otlp import split_by_trace
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Verdict
from tracejudge.model.spans import SpanRecord


class NoJudge:
    """A judge never called: admission does not judge."""

    def judge_spans(self, spans: Sequence[SpanRecord]) -> list[Verdict]:
        return []


def request(spans: int) -> ExportTraceServiceRequest:
    """One request of one new trace: a root span and ``spans - 1`` children."""
    tid, root = os.urandom(16), os.urandom(8)
    rs = ResourceSpans()
    rs.resource.attributes.append(KeyValue(key="service.name", value=AnyValue(string_value="b")))
    ss = rs.scope_spans.add()
    for i in range(spans):
        ss.spans.append(
            Span(
                trace_id=tid,
                span_id=root if i == 0 else os.urandom(8),
                parent_span_id=b"" if i == 0 else root,
                name="step",
                start_time_unix_nano=1_000_000_000,
                end_time_unix_nano=1_000_001_000,
            )
        )
    return ExportTraceServiceRequest(resource_spans=[rs])


def stage(config: CollectorConfig) -> Any:
    """The receivers' consumer in front of a fresh decision stage, built as the assembly
    builds them (an older tree: its ``Pipeline``, and admission in front when it has one)."""
    clock = ManualClock()
    try:
        from tracejudge.collector.assembly import admission_for
        from tracejudge.collector.component import Discard
        from tracejudge.collector.processors.decision import (
            DecisionContext,
            DecisionFactory,
            scrubber_for,
        )
        from tracejudge.collector.processors.hold import TraceHold
        from tracejudge.collector.processors.modes import forward_mode
    except ImportError:  # a tree from before the decision stage (issue 20)
        from tracejudge.collector.pipeline import Pipeline

        pipeline = Pipeline(config, NoJudge(), [], [], Stats([]), None, clock)
        try:
            from tracejudge.collector import assembly
        except ImportError:  # a tree from before admission was a stage
            return pipeline
        older: Any = assembly.admission_for  # then it took the pipeline alone
        return older(pipeline)
    scrubber = scrubber_for(config)
    mode = forward_mode(config, scrubber)
    hold = TraceHold(config, clock)
    context = DecisionContext(clock, Stats([]), NoJudge(), hold, scrubber, mode, [], [], None)
    factory = DecisionFactory()
    decision = factory.create(factory.config_for(config), Discard(), context)
    return admission_for(config, decision)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--spans", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n = args.requests
    config = CollectorConfig(
        forward=[], grpc_port=0, http_port=0, max_traces=10 * n, max_buffered_bytes=1 << 34
    ).validate()
    requests = [request(args.spans) for _ in range(n)]
    best = float("inf")
    name = ""
    for _ in range(args.rounds):
        splits = [split_by_trace(r) for r in requests]
        consumer = stage(config)
        name = type(consumer).__name__
        start = time.process_time()
        for split in splits:
            consumer.admit(split)
        best = min(best, time.process_time() - start)
    print(
        f"{name}.admit ({build_kind()} build): {best / n * 1e6:.2f} us CPU per request "
        f"({n} requests of 1 trace x {args.spans} spans, best of {args.rounds})"
    )


if __name__ == "__main__":
    main()
