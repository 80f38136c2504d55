"""End to end: a conversation of one trace per turn → ``tracejudge serve --conversation-wait``
→ real Jaeger, searched by verdict the way a user would.

The turns are emitted by the OTel SDK's OTLP/HTTP exporter (``conversation_support``: the
user's yes in turn 2, the cancellation in turn 3); the collector runs as the command with
the real engine and the one ``user_confirmation`` rule. In Jaeger, a tag search for
``tracejudge.verdict=fail`` must find every turn of the unconfirmed conversation, and one for
``pass`` every turn of the confirmed one.
"""

from __future__ import annotations

import json
import signal
import sys
import urllib.parse
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.collector.conversation_support import CONFIRMED, RULES, UNCONFIRMED, emit_turn
from tests.e2e.backends import JaegerInstance, http_get, wait_until
from tests.e2e.test_collector_jaeger import _wait_ready
from tests.support.guards import PROCESS_S, WAIT_S
from tests.support.ports import start_serve
from tracejudge import semconv as sc

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "airline-conversations-e2e"


def _search(jaeger: JaegerInstance, verdict: str) -> set[str]:
    """Trace ids Jaeger finds for a tag search on the verdict."""
    query = urllib.parse.urlencode(
        {
            "service": SERVICE,
            "tags": json.dumps({sc.TRACEJUDGE_VERDICT: verdict}),
            "limit": 50,
            "lookback": "1h",
        }
    )
    status, body = http_get(f"{jaeger.query_url}/api/traces?{query}")
    if status != 200:
        return set()
    return {t["traceID"] for t in json.loads(body).get("data") or []}


def test_every_turn_of_a_conversation_is_found_by_its_verdict(
    jaeger: JaegerInstance, tmp_path: Path
) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(RULES))
    verdicts = tmp_path / "verdicts.jsonl"
    proc, _, http_port = start_serve(
        [
            str(Path(sys.executable).with_name("tracejudge")), "serve",
            "--rules", str(rules),
            "--forward", f"grpc://{jaeger.otlp_grpc_endpoint}",
            "--grpc-port", "0",
            "--http-port", "0",
            "--decision-wait-after-root", "0.3s",
            "--conversation-wait", "1s",
            "--verdicts-jsonl", str(verdicts),
        ],
        tmp_path / "serve.log",
        cwd=ROOT,
    )  # fmt: skip
    try:
        _wait_ready(http_port, proc)
        provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces")
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("airline-e2e")
        a: list[str] = []
        b: list[str] = []
        try:
            a.append(emit_turn(tracer, "e2e-A", CONFIRMED[0], 0)[0])
            b.append(emit_turn(tracer, "e2e-B", UNCONFIRMED[0], 1)[0])
            a.append(emit_turn(tracer, "e2e-A", CONFIRMED[1], 2)[0])
            b.append(emit_turn(tracer, "e2e-B", UNCONFIRMED[1], 3)[0])
            a.append(emit_turn(tracer, "e2e-A", CONFIRMED[2], 4)[0])
        finally:
            provider.shutdown()
        wait_until(
            jaeger.process,
            lambda: _search(jaeger, "fail") >= set(b) and _search(jaeger, "pass") >= set(a),
            timeout=WAIT_S,
            what="every turn found by its verdict",
        )
        assert not _search(jaeger, "fail") & set(a)
        lines = [json.loads(x) for x in verdicts.read_text().splitlines()]
        assert sorted((v["verdict"], v["trace_ids"]) for v in lines) == [("fail", b), ("pass", a)]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(PROCESS_S) == 0
