"""A collector judging with the real engine, fed real instrumented runs over OTLP/HTTP.

The runs (tests/support/verdict_runs.py) are made by the real ``tracejudge.agent`` /
``tracejudge.tool`` instrumentation and exported by the OTel SDK's OTLP/HTTP exporter:
agent ``support`` version 1.4.0; ``stable`` 25 passes; ``canary`` 4 passes, 2 trajectory
failures and 1 hard-gate policy failure.
"""

from __future__ import annotations

import http.client
from collections.abc import Callable
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import tracejudge
from tests.collector.collector_support import wait_for
from tests.support import verdict_runs
from tests.support.guards import IO_S
from tracejudge.collector import Collector
from tracejudge.collector.processors.judge import load_judge


def management(c: Collector) -> int:
    """The management listener's port (where /metrics and the gate's routes are)."""
    assert c.management_port is not None
    return c.management_port


def otlp_status(c: Collector, path: str, method: str = "GET") -> int:
    """The status the OTLP/HTTP port answers for ``path`` (404 for management routes)."""
    conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=IO_S)
    try:
        conn.request(method, path, body=b"{}" if method == "POST" else None)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def judged_collector(collector_factory: Callable[..., Collector], tmp_path: Path) -> Collector:
    """A collector with the real engine; runs exported to it by the real instrumentation."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(verdict_runs.RULES, encoding="utf-8")
    c = collector_factory(
        judge=load_judge(rules),
        decision_wait_after_root=0.05,
        management_port=0,  # /metrics and the gate's routes live there alone
        metrics_case_slices={"refunds": ["refund-*"]},
    )
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{c.http_port}/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracejudge.instrument(tracer_provider=provider)
    try:
        n = verdict_runs.emit(
            [("stable", "pass", 25), ("canary", "pass", 4), ("canary", "fail", 2),
             ("canary", "policy", 1)]
        )  # fmt: skip
        provider.force_flush()
    finally:
        tracejudge.uninstrument()
        provider.shutdown()
    wait_for(lambda: c.stats.traces_decided == n, what=f"{n} decisions")
    return c
