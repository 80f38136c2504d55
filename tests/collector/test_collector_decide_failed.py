"""A decision that fails marks every root span of its trace, on a manual clock.

No sockets: the pipeline is driven directly (``ingest``, then ``tick`` at the deadline)
with one forward queue that is never started, so what would be forwarded is read from it.
The fragment that makes the decision fail is written into the buffer as a receiver from an
older version could have accepted it (the receivers now refuse such bytes).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.collector.collector_support import (
    StandInJudge,
    attrs,
    decision_stage,
    make_request,
    make_span,
)
from tracejudge import semconv as sc
from tracejudge.collector import CollectorConfig
from tracejudge.collector.assembly import admission_for
from tracejudge.collector.clock import ManualClock
from tracejudge.collector.codec.otlp import TraceFragment
from tracejudge.collector.exporters.file_target import FileTarget
from tracejudge.collector.exporters.forward import TargetQueue
from tracejudge.collector.telemetry.stats import Stats


def test_every_root_of_a_trace_whose_decision_failed_is_marked(tmp_path: Path) -> None:
    """Two runs (two root spans, in two requests) and one unparseable fragment: both
    roots reach the backend with ``tracejudge.verdict = error``. Only the first was
    marked before (the loop stopped marking once it had a root id)."""
    clock = ManualClock()
    cfg = CollectorConfig(
        forward=[], grpc_port=0, http_port=0, decision_wait_after_root=0.5, decision_wait=2.0
    ).validate()
    stats = Stats([])
    q = TargetQueue(
        FileTarget(tmp_path / "out.jsonl"),
        stats=stats,
        store=None,
        max_batch_bytes=1 << 20,
        retry_initial=0.1,
        retry_max=1.0,
    )
    p = decision_stage(cfg, StandInJudge(), [q], [], stats, None, clock)
    tid = os.urandom(16)
    roots = [os.urandom(8), os.urandom(8)]

    async def go() -> None:
        for root in roots:
            admission_for(cfg, p).ingest(make_request([make_span(tid, root)]))
        p.buffer.add(TraceFragment(tid, b"\x0a\xff\xff\xff", 1, False), clock.now())
        clock.advance(0.6)
        await p.tick()

    asyncio.run(go())
    assert stats.decision_errors == 1
    marked = {}
    for item in q.items:
        request = ExportTraceServiceRequest.FromString(item.payload)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    marked[span.span_id] = attrs(span).get(sc.TRACEJUDGE_VERDICT)
    assert marked == dict.fromkeys(roots, "error")
