"""Two tracejudge instances behind the real OpenTelemetry Collector's load_balancing exporter.

tracejudge judges whole traces, so every span of a trace must reach one instance even when
the agent exports it in pieces. The loadbalancing exporter (``routing_key: traceID``,
static resolver) is the documented way to scale out; this test proves the pairing works:
every trace is decided exactly once, by one instance, with all of its spans.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.e2e.backends import JaegerInstance, OtelcolFactory
from tests.support.guards import IO_S, PROCESS_S, wait_for
from tracejudge import semconv as sc

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "refund" / "rules.yaml"
TRACES = 60
SPANS_PER_TRACE = 6

LB_CONFIG = """
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${env:OTLP_GRPC_PORT}
      http:
        endpoint: 127.0.0.1:${env:OTLP_HTTP_PORT}
processors:
  batch:
    timeout: 100ms
exporters:
  load_balancing:
    routing_key: traceID
    protocol:
      otlp:
        tls:
          insecure: true
        timeout: 5s
    resolver:
      static:
        hostnames:
          - "127.0.0.1:${env:TJ1_PORT}"
          - "127.0.0.1:${env:TJ2_PORT}"
extensions:
  health_check:
    endpoint: 127.0.0.1:${env:HEALTH_PORT}
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [load_balancing]
"""


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _metrics(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=IO_S) as r:
        out: dict[str, Any] = json.loads(r.read())
        return out


def _wait_ready(port: int, proc: subprocess.Popen[bytes]) -> None:
    def ready() -> bool:
        assert proc.poll() is None, "tracejudge serve exited early"
        try:
            _metrics(port)
        except OSError:
            return False
        return True

    wait_for(ready, what="tracejudge serve ready")


@pytest.fixture
def instances(jaeger: JaegerInstance, tmp_path: Path) -> Iterator[list[tuple[int, int, Path]]]:
    """Two ``tracejudge serve`` processes: (grpc port, http port, verdicts file) each."""
    procs: list[subprocess.Popen[bytes]] = []
    out = []
    try:
        for i in range(2):
            grpc_port, http_port = _free_ports(2)
            verdicts = tmp_path / f"verdicts-{i}.jsonl"
            proc = subprocess.Popen(
                [
                    str(Path(sys.executable).with_name("tracejudge")), "serve",
                    "--rules", str(RULES),
                    "--forward", f"grpc://{jaeger.otlp_grpc_endpoint}",
                    "--grpc-port", str(grpc_port), "--http-port", str(http_port),
                    "--decision-wait-after-root", "2s", "--decision-wait", "20s",
                    "--verdicts-jsonl", str(verdicts),
                ],
                cwd=ROOT,
            )  # fmt: skip
            procs.append(proc)
            _wait_ready(http_port, proc)
            out.append((grpc_port, http_port, verdicts))
        yield out
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(PROCESS_S)


def _runs() -> list[ReadableSpan]:
    """TRACES agent runs of SPANS_PER_TRACE spans each, made with the real SDK."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "lb-e2e"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tracejudge.e2e.lb")
    for _ in range(TRACES):
        with tracer.start_as_current_span(
            "invoke_agent refund",
            attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "refund"},
        ):
            for _ in range(SPANS_PER_TRACE - 1):
                with tracer.start_as_current_span(
                    "execute_tool lookup_order",
                    attributes={
                        sc.GEN_AI_OPERATION_NAME: "execute_tool",
                        sc.GEN_AI_TOOL_NAME: "lookup_order",
                    },
                ):
                    pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def test_every_trace_judged_once_and_whole(
    otelcol_factory: OtelcolFactory,
    instances: list[tuple[int, int, Path]],
    jaeger: JaegerInstance,
) -> None:
    """Spans of each trace are exported in three separate calls (root first); the load
    balancer must route them all to one instance, which judges the trace exactly once."""
    lb = otelcol_factory(
        LB_CONFIG,
        env={"TJ1_PORT": str(instances[0][0]), "TJ2_PORT": str(instances[1][0])},
    )
    spans = _runs()
    roots = [s for s in spans if s.parent is None]
    children = [s for s in spans if s.parent is not None]
    parts = [roots, children[: len(children) // 2], children[len(children) // 2 :]]
    exporter = OTLPSpanExporter(endpoint=lb.otlp_grpc_endpoint, insecure=True, timeout=IO_S)
    try:
        for part in parts:  # three calls, each acknowledged before the next
            assert exporter.export(part) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    expected = {f"{s.context.trace_id:032x}" for s in roots if s.context is not None}

    def decided() -> int:
        return sum(_metrics(http)["traces_decided"] for _, http, _ in instances)

    def settled() -> bool:  # every trace decided and nothing left buffered: counts final
        stats = [_metrics(http) for _, http, _ in instances]
        return decided() >= TRACES and all(s["buffered_traces"] == 0 for s in stats)

    wait_for(settled, what=f"{TRACES} traces decided")
    stats = [_metrics(http) for _, http, _ in instances]
    assert sum(s["traces_decided"] for s in stats) == TRACES
    assert sum(s["spans"]["received"] for s in stats) == TRACES * SPANS_PER_TRACE
    assert sum(s["spans"]["late"] for s in stats) == 0
    assert all(s["traces_decided"] > 0 for s in stats), "one instance got everything"
    seen: dict[str, int] = {}
    for _, _, path in instances:
        for line in path.read_text().splitlines():
            tid = json.loads(line)["trace_id"]
            seen[tid] = seen.get(tid, 0) + 1
    assert set(seen) == expected
    assert set(seen.values()) == {1}
    sample = sorted(expected)[0]
    trace = jaeger.get_trace(sample, min_spans=SPANS_PER_TRACE)
    assert len(trace["spans"]) == SPANS_PER_TRACE
