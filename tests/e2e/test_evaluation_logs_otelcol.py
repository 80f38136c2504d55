"""Evaluation results and forwarded log records reach the real OpenTelemetry Collector.

``tracejudge serve`` (in-process) forwards log records to the real otelcol
(``--forward-logs grpc://…`` and ``http://…``) whose logs pipeline ends in the debug
exporter at ``verbosity: detailed``; its output is the evidence: each
``gen_ai.evaluation.result`` record with the required ``gen_ai.evaluation.name``, the score
label and value, the trace id and the span id of the judged span, and the application's
own log record, joined to its trace before judging, with its body.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.collector.collector_support import (
    LoopThread,
    StandInJudge,
    make_request,
    make_span,
    new_ids,
    post,
    start_collector,
)
from tests.collector.logs_support import log_record, logs_request
from tests.e2e.backends import OtelcolFactory, OtelcolInstance
from tests.support.guards import eventually
from tracejudge import semconv as sc
from tracejudge.collector import CollectorConfig

pytestmark = pytest.mark.e2e

CONFIG = """
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${env:OTLP_GRPC_PORT}
      http:
        endpoint: 127.0.0.1:${env:OTLP_HTTP_PORT}
exporters:
  debug:
    verbosity: detailed
extensions:
  health_check:
    endpoint: 127.0.0.1:${env:HEALTH_PORT}
service:
  extensions: [health_check]
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [debug]
"""


@pytest.fixture
def lt() -> Iterator[LoopThread]:
    loop = LoopThread()
    yield loop
    loop.close()


def _records(text: str) -> list[str]:
    """The debug exporter's ``LogRecord #n`` blocks."""
    return re.split(r"\nLogRecord #\d+\n", text)[1:]


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_evaluation_records_reach_otelcol_with_required_attributes(
    protocol: str, otelcol_factory: OtelcolFactory, lt: LoopThread
) -> None:
    otelcol: OtelcolInstance = otelcol_factory(CONFIG)
    url = (
        f"grpc://{otelcol.otlp_grpc_endpoint}" if protocol == "grpc" else otelcol.otlp_http_endpoint
    )
    cfg = CollectorConfig(
        forward=[],
        grpc_port=0,
        http_port=0,
        decision_wait_after_root=0.2,
        decision_wait=2.0,
        forward_logs=url,
        evaluation_logs=True,
    ).validate()
    c = start_collector(lt, cfg, StandInJudge())
    try:
        tid, root = new_ids()
        _, tool = new_ids()
        note = log_record(tid, root, "app.note", body="customer asked for order 7")
        status, _, _ = post(c.http_port, logs_request([note]).SerializeToString(), path="/v1/logs")
        assert status == 200
        spans = [make_span(tid, root), make_span(tid, tool, root, error=True)]
        status, _, _ = post(c.http_port, make_request(spans).SerializeToString())
        assert status == 200

        def both() -> list[str] | None:
            found = [b for b in _records(otelcol.read_log(200_000)) if tid.hex() in b]
            return found if len(found) >= 2 else None

        blocks = eventually(both, "both log records in otelcol's output")
    finally:
        lt.run(c.stop(timeout=3.0))
    evaluation = [b for b in blocks if f"EventName: {sc.EVENT_GEN_AI_EVALUATION_RESULT}" in b]
    assert len(evaluation) == 1, otelcol.read_log()
    (block,) = evaluation
    assert f"-> {sc.GEN_AI_EVALUATION_NAME}: Str(no-errors)" in block
    assert f"-> {sc.GEN_AI_EVALUATION_SCORE_LABEL}: Str(fail)" in block
    assert f"-> {sc.GEN_AI_EVALUATION_SCORE_VALUE}: Double(0)" in block
    assert f"-> {sc.GEN_AI_EVALUATION_EXPLANATION}: Str(a span failed)" in block
    assert f"Trace ID: {tid.hex()}" in block
    assert f"Span ID: {tool.hex()}" in block
    assert "SeverityNumber: Error(17)" in block
    (app,) = [b for b in blocks if "EventName: app.note" in b]
    assert "Body: Str(customer asked for order 7)" in app
    assert f"Span ID: {root.hex()}" in app
