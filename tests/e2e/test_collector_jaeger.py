"""End to end: the instrumented refund agent → ``tracejudge serve`` (real rules) → real Jaeger.

Everything is real: the agent process exports with the OTel SDK's OTLP exporter, the
collector runs as the ``tracejudge serve`` command, and the verdict is read back through
Jaeger's own query API, as a user would see it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.backends import JaegerInstance
from tests.support.guards import IO_S, PROCESS_S, eventually, wait_for
from tests.support.ports import start_serve
from tracejudge import semconv as sc

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "refund" / "rules.yaml"


def _wait_ready(port: int, proc: subprocess.Popen[bytes]) -> None:
    """Poll the collector's /healthz (an HTTP answer, not just an open port)."""

    def ready() -> bool:
        assert proc.poll() is None, "tracejudge serve exited early"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=IO_S) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    wait_for(ready, what=f"tracejudge serve on port {port} ready")


@pytest.fixture
def serve(jaeger: JaegerInstance, tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """``tracejudge serve`` forwarding to Jaeger over OTLP/gRPC; yields (http port, verdicts)."""
    verdicts = tmp_path / "verdicts.jsonl"
    proc, _, http_port = start_serve(
        [
            str(Path(sys.executable).with_name("tracejudge")), "serve",
            "--rules", str(RULES),
            "--forward", f"grpc://{jaeger.otlp_grpc_endpoint}",
            "--grpc-port", "0",
            "--http-port", "0",
            "--decision-wait-after-root", "0.5s",
            "--decision-wait", "10s",
            "--verdicts-jsonl", str(verdicts),
        ],
        tmp_path / "serve.log",
        cwd=ROOT,
    )  # fmt: skip
    try:
        _wait_ready(http_port, proc)
        yield http_port, verdicts
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(PROCESS_S) == 0


def _attr(attrs: list[dict[str, Any]], key: str) -> Any:
    for kv in attrs:
        if kv["key"] == key:
            value = kv["value"]
            if "arrayValue" in value:
                return [next(iter(v.values())) for v in value["arrayValue"].get("values", [])]
            return next(iter(value.values()), None)
    return None


def test_silent_failure_is_marked_fail_in_jaeger(
    serve: tuple[int, Path], jaeger: JaegerInstance
) -> None:
    """The headline case: the agent says "refunded" but never called the refund API. In
    Jaeger the run root reads tracejudge.verdict=fail, the span that proves it carries the
    failure code, and the rule outcomes are gen_ai.evaluation.result events."""
    http_port, verdicts = serve
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{http_port}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": "refund-agent-e2e",
    }
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "refund" / "agent.py"), "--variant",
         "silent_failure"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_S, check=True,
    ).stdout  # fmt: skip
    match = re.search(r"trace: ([0-9a-f]{32})", out)
    assert match, out
    trace_id = match.group(1)
    jaeger.get_trace(trace_id, min_spans=2)

    def stamped() -> list[dict[str, Any]] | None:  # the stamped root may be stored last
        doc = jaeger.get_trace_otlp(trace_id)
        got = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
        verdicts = [s for s in got if _attr(s.get("attributes", []), sc.TRACEJUDGE_VERDICT)]
        return got if verdicts else None

    spans = eventually(stamped, "the stamped root in Jaeger")
    roots = [s for s in spans if _attr(s.get("attributes", []), sc.TRACEJUDGE_VERDICT)]
    assert len(roots) == 1
    root = roots[0]
    assert _attr(root["attributes"], sc.TRACEJUDGE_VERDICT) == "fail"
    code = _attr(root["attributes"], sc.TRACEJUDGE_FAILURE_CODE)
    assert code == "F-OUTPUT-UNSUPPORTED_CLAIM"
    failure_span_id = _attr(root["attributes"], sc.TRACEJUDGE_FAILURE_SPAN_ID)
    by_id = {s["spanId"].lower(): s for s in spans}
    codes = _attr(by_id[failure_span_id]["attributes"], sc.TRACEJUDGE_FINDING_CODES)
    codes = json.loads(codes) if isinstance(codes, str) else codes
    assert code in codes
    events = [
        e for s in spans for e in s.get("events", [])
        if e["name"] == sc.EVENT_GEN_AI_EVALUATION_RESULT
    ]  # fmt: skip
    assert events
    labels = {_attr(e["attributes"], sc.GEN_AI_EVALUATION_SCORE_LABEL) for e in events}
    assert "fail" in labels
    assert all(_attr(e["attributes"], sc.GEN_AI_EVALUATION_NAME) for e in events)
    lines = [json.loads(x) for x in verdicts.read_text().splitlines()]
    assert [(v["trace_id"], v["verdict"]) for v in lines] == [(trace_id, "fail")]
