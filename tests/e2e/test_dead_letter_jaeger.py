"""End to end: a dead-letter line is an OTLP/JSON request a real backend takes as it is.

The collector's backend (a real OTLP receiver, ``Sink``) refuses a batch with HTTP 400; the
batch lands in ``--dead-letter``; the line, ``deadLetter`` object included, is POSTed to real
Jaeger v2's OTLP/HTTP receiver (unknown fields are ignored by OTLP/JSON decoders), and
Jaeger's query API returns the trace with every span: the replay a person would do once the
cause of the refusal is fixed.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.collector.collector_support import (
    LoopThread,
    Sink,
    config,
    make_request,
    make_span,
    new_ids,
    post,
    start_collector,
)
from tests.e2e.backends import JaegerInstance
from tests.support.guards import IO_S, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def refusing_sink() -> Iterator[tuple[LoopThread, Sink]]:
    """A loop thread and an OTLP receiver that answers the first request with 400."""
    lt = LoopThread()
    sink = Sink(fail_http=[400], fail_body=b"span name too long")
    lt.run(sink.start())
    try:
        yield lt, sink
    finally:
        lt.run(sink.stop())
        lt.close()


def test_a_dead_letter_line_replays_into_jaeger(
    jaeger: JaegerInstance, refusing_sink: tuple[LoopThread, Sink], tmp_path: Path
) -> None:
    """Refused by the first backend, kept in the file, accepted by Jaeger as it is."""
    lt, sink = refusing_sink
    dead = tmp_path / "dead.jsonl"
    collector = start_collector(lt, config(sink, tmp_path, dead_letter=dead))
    try:
        tid, rid = new_ids()
        spans = [make_span(tid, rid, name="agent"), make_span(tid, parent=rid, name="tool")]
        assert post(collector.http_port, make_request(spans).SerializeToString())[0] == 200
        wait_for(
            lambda: dead.exists() and dead.read_text(encoding="utf-8").endswith("\n"),
            what="the dead-letter line",
        )
    finally:
        lt.run(collector.stop(timeout=1.0))
    (line,) = dead.read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["deadLetter"]["reason"] == "span name too long"

    request = urllib.request.Request(
        jaeger.otlp_http_traces_url,
        data=line.encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=IO_S) as resp:
        assert resp.status == 200
    trace = jaeger.get_trace(tid.hex(), min_spans=2)
    assert sorted(s["operationName"] for s in trace["spans"]) == ["agent", "tool"]
