"""Shadow runs through a real collector: the real instrumentation exports a stable and a
shadow trace per request with the OTel SDK's OTLP/HTTP exporter; the collector judges them
with the real engine, writes the shadow reports beside the verdict lines and counts them in
``/metrics``. (The unpaired-after-the-wait case is timed on the manual clock in
test_collector_shadow.py; a real-time wait here would only be a sleep.)"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import tracejudge
from tests.collector.collector_support import wait_for
from tests.collector.test_collector_prometheus import parse_exposition
from tests.support import shadow_runs
from tests.support.guards import IO_S
from tests.support.shadow_runs import run_once
from tracejudge.collector import Collector
from tracejudge.collector.processors.judge import load_judge
from tracejudge.collector.telemetry.exposition import OUTCOME_LABEL, RUNS, SHADOW_PAIRS, SHADOW_RUNS


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


def test_stable_and_shadow_traces_pair_over_otlp(
    collector_factory: Callable[..., Collector], tmp_path: Path
) -> None:
    """Request r-1: the shadow skips the refund (diverged, F-SHADOW-MISSING_CALL); request
    r-2: the same trajectory (paired). /metrics counts one of each in the shadow series and
    only the two stable runs in tracejudge_runs_total."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(shadow_runs.RULES, encoding="utf-8")
    c = collector_factory(judge=load_judge(rules), decision_wait_after_root=0.05)
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{c.http_port}/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracejudge.instrument(tracer_provider=provider)
    try:
        run_once("refund", request_id="r-1")
        run_once("no_refund", request_id="r-1", shadow=True, variant="v2")
        run_once("refund", request_id="r-2")
        run_once("refund", request_id="r-2", shadow=True, variant="v2")
        provider.force_flush()
    finally:
        tracejudge.uninstrument()
        provider.shutdown()
    out = tmp_path / "verdicts.jsonl"
    wait_for(
        lambda: sum(1 for r in _lines(out) if r.get("record") == "shadow") == 2,
        what="two shadow reports",
    )
    reports = {r["request_id"]: r for r in _lines(out) if r.get("record") == "shadow"}
    assert reports["r-1"]["outcome"] == "diverged"
    assert [f["code"] for f in reports["r-1"]["findings"]] == [
        "F-SHADOW-MISSING_CALL",
        "F-SHADOW-TERMINAL_ACTION",
    ]
    assert reports["r-2"]["outcome"] == "paired"
    req = urllib.request.Request(
        f"http://127.0.0.1:{c.http_port}/metrics", headers={"Accept": "text/plain"}
    )
    with urllib.request.urlopen(req, timeout=IO_S) as resp:
        samples = parse_exposition(resp.read().decode())

    def total(name: str, **labels: str) -> float:
        return sum(
            v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls)
        )

    assert total(SHADOW_PAIRS, **{OUTCOME_LABEL: "diverged"}) == 1
    assert total(SHADOW_PAIRS, **{OUTCOME_LABEL: "paired"}) == 1
    assert total(SHADOW_PAIRS, tracejudge_variant_id="v2") == 2
    assert total(SHADOW_RUNS) == 2
    assert total(RUNS) == 2  # the stable runs only: shadows are not user traffic
    assert total(RUNS, tracejudge_variant_id="v2") == 0
    base = f"http://127.0.0.1:{c.http_port}/v1/gate?agent=support&variant=v2&min_runs=1"

    def gate(query: str) -> dict[str, Any]:
        with urllib.request.urlopen(base + query, timeout=IO_S) as resp:
            answer: dict[str, Any] = json.loads(resp.read())
            return answer

    assert gate("")["runs"] == 0  # the gate's window never counts shadows as traffic...
    with_shadows = gate("&shadow=include")  # ...unless asked to read them as evidence
    assert (with_shadows["runs"], with_shadows["passes"]) == (2, 1)  # r-1's divergence is hard
    with pytest.raises(urllib.error.HTTPError) as refused:
        gate("&shadow=maybe")
    assert refused.value.code == 400
    assert "shadow" in refused.value.read().decode()
