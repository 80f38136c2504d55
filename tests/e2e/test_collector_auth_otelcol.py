"""The real OpenTelemetry Collector as a client of an authenticated ``tracejudge serve``.

An otelcol in front of tracejudge is the common production shape (load balancing, see
test_loadbalancing.py), so its own exporters must get in with what docs/deployment.md tells
users to configure: ``headers: {authorization: "Bearer ${env:...}"}`` and ``tls: {ca_file}``,
over OTLP/gRPC and OTLP/HTTP. A third exporter with TLS but no token sends the same spans and
is refused: tracejudge keeps each run once and counts the refusals.
"""

from __future__ import annotations

import json
import re
import signal
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.e2e.backends import OtelcolFactory
from tests.support.certs import Certs, make_certs
from tests.support.guards import IO_S, PROCESS_S, eventually
from tracejudge import semconv as sc
from tracejudge.model.files import load_spans

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "refund" / "rules.yaml"
TOKEN = "otelcol-e2e-token-9c3b7e21a4f0d856"
START = re.compile(
    r"^tracejudge serve: listening on OTLP/gRPC 127\.0\.0\.1:(\d+) \(TLS\), "
    r"OTLP/HTTP https://127\.0\.0\.1:(\d+), management https://127\.0\.0\.1:(\d+);"
)

OTELCOL = """
receivers:
  otlp/via_grpc:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${env:OTLP_GRPC_PORT}
  otlp/via_http:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${env:OTLP_HTTP_PORT}
processors:
  batch:
    timeout: 100ms
exporters:
  otlp_grpc/tracejudge:
    endpoint: 127.0.0.1:${env:TJ_GRPC_PORT}
    headers:
      authorization: "Bearer ${env:TJ_TOKEN}"
    tls:
      ca_file: ${env:TJ_CA}
  otlp_http/tracejudge:
    endpoint: https://127.0.0.1:${env:TJ_HTTP_PORT}
    headers:
      authorization: "Bearer ${env:TJ_TOKEN}"
    tls:
      ca_file: ${env:TJ_CA}
  otlp_grpc/anonymous:
    endpoint: 127.0.0.1:${env:TJ_GRPC_PORT}
    tls:
      ca_file: ${env:TJ_CA}
    retry_on_failure:
      enabled: false
extensions:
  health_check:
    endpoint: 127.0.0.1:${env:HEALTH_PORT}
service:
  extensions: [health_check]
  pipelines:
    traces/grpc:
      receivers: [otlp/via_grpc]
      processors: [batch]
      exporters: [otlp_grpc/tracejudge, otlp_grpc/anonymous]
    traces/http:
      receivers: [otlp/via_http]
      processors: [batch]
      exporters: [otlp_http/tracejudge]
"""


def _run(endpoint: str, runs: int) -> set[str]:
    """Export ``runs`` two-span agent runs to the otelcol at ``endpoint``; their trace ids."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("auth-e2e")
    for _ in range(runs):
        with (
            tracer.start_as_current_span(
                "invoke_agent refund", attributes={sc.GEN_AI_AGENT_NAME: "refund"}
            ),
            tracer.start_as_current_span("execute_tool lookup_order"),
        ):
            pass
    provider.shutdown()
    spans = memory.get_finished_spans()
    exporter = OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=IO_S)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    return {f"{s.context.trace_id:032x}" for s in spans if s.context is not None}


def _metrics(port: str, certs: Certs) -> dict[str, Any]:
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    req = urllib.request.Request(
        f"https://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(req, timeout=IO_S, context=ctx) as resp:
        out: dict[str, Any] = json.loads(resp.read())
        return out


def test_otelcol_exporters_get_in_with_token_and_ca(
    otelcol_factory: OtelcolFactory, tmp_path: Path
) -> None:
    certs = make_certs(tmp_path / "certs")
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n", encoding="utf-8")
    tokens.chmod(0o600)
    judged = tmp_path / "judged.jsonl"
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("tracejudge")), "serve", "--rules", str(RULES),
            "--grpc-port", "0", "--http-port", "0", "--management-port", "0",
            "--decision-wait-after-root", "300ms", "--output", str(judged),
            "--auth-token-file", str(tokens),
            "--tls-cert", str(certs.server_cert), "--tls-key", str(certs.server_key),
        ],
        stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.stderr is not None
    try:
        seen: list[str] = []
        start = None
        while start is None:  # the start-up line comes after any warnings
            line = proc.stderr.readline()
            assert line, "".join(seen)
            seen.append(line)
            start = START.match(line)
        grpc_port, http_port, mgmt = start.groups()
        col = otelcol_factory(
            OTELCOL,
            env={
                "TJ_GRPC_PORT": grpc_port,
                "TJ_HTTP_PORT": http_port,
                "TJ_TOKEN": TOKEN,
                "TJ_CA": str(certs.ca),
            },
        )
        via_grpc = _run(col.otlp_grpc_endpoint, 3)
        via_http = _run(col.endpoint("otlp_http"), 2)
        m = eventually(
            lambda: (
                got
                if (got := _metrics(mgmt, certs))["traces_decided"] >= 5
                and got["auth"]["refused"] >= 1
                else None
            ),
            "5 decisions and the refused export",
        )
        assert m["traces_decided"] == 5, m
        assert m["spans"]["received"] == 10
        assert m["auth"]["invalid"] == 0
        assert m["auth"]["by_listener"] == {"OTLP/gRPC": m["auth"]["missing"]}
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=PROCESS_S)
    assert proc.returncode == 0, err
    spans = load_spans(judged)
    assert {s.trace_id for s in spans} == via_grpc | via_http
    assert len(spans) == 10, "each run kept once: the anonymous copy was refused"
    roots = [s for s in spans if s.parent_span_id is None]
    assert all(sc.TRACEJUDGE_VERDICT in s.attributes for s in roots)
