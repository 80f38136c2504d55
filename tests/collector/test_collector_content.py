"""``serve --drop-content`` end to end: nothing the run model reads as content leaves the
collector, whichever way it leaves (issue 18 item 2).

Every place of ``tracejudge.model.places`` (the run model's reader tables) is sent at
once, as spans over OTLP/HTTP and log records over ``/v1/logs``, with the OpenInference
``llm.prompts`` list and ``llm.prompt_template.variables`` and plain log lines besides.
The backend refuses the first trace (it goes to the dead-letter file) and takes the
second; ``--output`` writes both; the logs go to a real OTLP logs receiver. Before the
one content declaration the older-convention events, the un-indexed ``gen_ai.prompt``
and the log bodies reached all four.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from tests.collector.collector_support import LoopThread, Sink, attrs, post, wait_for
from tests.collector.logs_support import LogsSink
from tests.support.content_places import SECRET, T0, WORD, agent_root, carry, kv
from tracejudge import semconv as sc
from tracejudge.collector import Collector
from tracejudge.model.places import content_places


@pytest.fixture
def logs_sink(lt: LoopThread) -> Iterator[LogsSink]:
    """A real OTLP logs receiver standing in for the logs backend."""
    s = LogsSink()
    lt.run(s.start())
    yield s
    lt.run(s.stop())


def _trace() -> tuple[bytes, bytes, bytes, int]:
    """One agent trace carrying content at every reader place, and its log records
    (those places' log forms, a plain log line on the trace and one without a trace):
    (spans request, logs request, trace id, span count)."""
    tid = os.urandom(16)
    rs = ResourceSpans()
    rs.resource.attributes.append(kv(sc.SERVICE_NAME, "agent-svc"))
    ss = rs.scope_spans.add()
    rl = ResourceLogs()
    sl = rl.scope_logs.add()
    root = agent_root(ss, tid, os.urandom(8))
    for place in content_places():
        carry(place, ss, sl, root, None if place.role == "agent" else os.urandom(8))
    llm = ss.spans.add(
        trace_id=tid,
        span_id=os.urandom(8),
        parent_span_id=root.span_id,
        name="completion",
        start_time_unix_nano=T0,
        end_time_unix_nano=T0 + 1,
    )
    llm.attributes.append(kv(sc.FOREIGN_OPENINFERENCE_SPAN_KIND, "LLM"))
    prompts = llm.attributes.add(key=sc.FOREIGN_LLM_PROMPTS)
    prompts.value.array_value.values.add(string_value=SECRET)
    llm.attributes.append(kv(sc.FOREIGN_LLM_PROMPT_TEMPLATE_VARIABLES, f'{{"q": "{SECRET}"}}'))
    sl.log_records.add(
        time_unix_nano=T0, trace_id=tid, span_id=root.span_id
    ).body.string_value = f"user said {SECRET}"
    sl.log_records.add(time_unix_nano=T0).body.string_value = f"untraced: {SECRET}"
    spans = ExportTraceServiceRequest(resource_spans=[rs]).SerializeToString()
    logs = ExportLogsServiceRequest(resource_logs=[rl]).SerializeToString()
    return spans, logs, tid, len(ss.spans)


def test_no_content_leaves_by_any_way_out_under_drop_content(
    collector_factory: Callable[..., Collector],
    sink: Sink,
    logs_sink: LogsSink,
    tmp_path: Path,
) -> None:
    """Forwarded spans, ``--output``, the dead-letter file and forwarded log records hold
    none of the content; every span that carried some says it was dropped, and the log
    records keep their names and trace context."""
    out, dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    c = collector_factory(
        drop_content=True,
        output=out,
        dead_letter=dead,
        forward_logs=logs_sink.http_url,
        decision_wait_after_root=0.05,
    )
    sink.fail_http = [400]  # the first trace is refused for good: dead-lettered
    refused, refused_logs, _, n = _trace()
    assert post(c.http_port, refused_logs, path="/v1/logs")[0] == 200
    assert post(c.http_port, refused)[0] == 200
    wait_for(lambda: dead.exists() and dead.stat().st_size > 0, what="the dead-letter line")
    spans, logs, tid, _ = _trace()
    assert post(c.http_port, logs, path="/v1/logs")[0] == 200
    assert post(c.http_port, spans)[0] == 200
    wait_for(lambda: len(sink.spans()) == n, what="the second trace at the backend")
    wait_for(lambda: len(out.read_text().splitlines()) >= 2, what="both traces in --output")
    per_trace = sum(p.carrier.startswith("log") for p in content_places()) + 2
    wait_for(lambda: len(logs_sink.records()) == 2 * per_trace, what="every log record")

    forwarded = b"".join(s.SerializeToString() for s in sink.spans())
    records = logs_sink.records()
    written = {
        "forwarded spans": forwarded.decode("utf-8", "replace"),
        "--output": out.read_text(),
        "dead letter": dead.read_text(),
        "forwarded logs": b"".join(r.SerializeToString() for r in records).decode(
            "utf-8", "replace"
        ),
    }
    assert {where: WORD in text for where, text in written.items()} == dict.fromkeys(written, False)
    assert tid.hex() in written["--output"]
    on_spans = [p for p in content_places() if p.carrier.startswith("span")]
    flagged = [s for s in sink.spans() if attrs(s).get(sc.TRACEJUDGE_CONTENT_DROPPED) is True]
    # Each non-agent span place has a span of its own, the agent places share the root,
    # and the OpenInference completion span is one more.
    assert len(flagged) == sum(p.role != "agent" for p in on_spans) + 1 + 1
    assert not any(r.HasField("body") for r in records)
    dropped = [r for r in records if r.event_name]
    assert dropped
    assert all(
        {kv.key: kv.value.bool_value for kv in r.attributes}[sc.TRACEJUDGE_CONTENT_DROPPED]
        for r in dropped
    )
