"""``GET /v1/gate`` on a running collector: fed by the verdicts it decides.

Runs are posted over OTLP/HTTP and judged by a stand-in judge (rule semantics are the
engine's tests' business; the gate's statistics are tests/gate's): the stand-in's verdict
carries the run's variant (``tracejudge.variant.id`` on the root) and, for a span marked
``test.policy=violated``, a hard-gate policy failure. What is checked here is the
wiring: decided runs reach the gate, the answer's shape, its status codes, and how Argo
Rollouts reads it.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.collector.collector_support import (
    Sink,
    StandInJudge,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)
from tests.gate.gate_support import argo_phase
from tests.support.guards import IO_S
from tracejudge import semconv as sc
from tracejudge.cli import main
from tracejudge.collector import Collector
from tracejudge.engine.verdict import Finding, Verdict
from tracejudge.model.spans import SpanRecord


class VariantJudge(StandInJudge):
    """The stand-in judge, plus the run's variant and a policy failure on demand."""

    def judge_spans(self, spans: Sequence[SpanRecord]) -> list[Verdict]:
        roots = {s.span_id: s for s in spans if s.parent_span_id is None}
        violated = [s for s in spans if s.attributes.get("test.policy") == "violated"]
        out = []
        for v in super().judge_spans(spans):
            root = roots[v.root_span_id]
            v = dataclasses.replace(
                v, variant=str(root.attributes.get(sc.TRACEJUDGE_VARIANT_ID, "")) or None
            )
            if violated:
                f = Finding(
                    "F-POLICY-TEST", "fail", "policy", "p", (violated[0].span_id,), "forbidden"
                )
                v = dataclasses.replace(
                    v,
                    verdict="fail",
                    layers={**v.layers, "policy": "fail"},
                    findings=[f, *v.findings],
                    primary=f,
                )
            out.append(v)
        return out


def _send(port: int, variant: str, *, error: bool = False, policy: bool = False) -> None:
    trace_id, root_id = new_ids()
    attrs = {sc.GEN_AI_AGENT_NAME: "refund", sc.TRACEJUDGE_VARIANT_ID: variant}
    child_attrs = {"test.policy": "violated"} if policy else None
    spans = [
        make_span(trace_id, root_id, attributes=attrs),
        make_span(trace_id, parent=root_id, error=error, attributes=child_attrs),
    ]
    status, _, body = post(port, make_request(spans).SerializeToString())
    assert status == 200, body


def _gate(port: int, query: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/gate?{query}", timeout=IO_S) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def gated(collector_factory: Callable[..., Collector]) -> Collector:
    return collector_factory(judge=VariantJudge(), decision_wait_after_root=0.05)


def test_gate_answers_from_decided_runs(gated: Collector, sink: Sink, tmp_path: Path) -> None:
    """30 stable runs pass; a canary failing 3 runs in 10 (silent outcome failures) is
    failed against it; the same query is answered by ``tracejudge gate`` over the
    collector's verdict lines (the management listener's gate: test_collector_auth.py)."""
    for _ in range(30):
        _send(gated.http_port, "stable")
    for i in range(30):
        _send(gated.http_port, "canary", error=i % 10 < 3)
    wait_for(lambda: gated.stats.traces_decided == 60, what="60 decisions")
    q = "agent=refund&variant=canary&baseline=stable&min_runs=20&margin=0.05"
    status, answer = _gate(gated.http_port, q)
    assert status == 200
    assert answer["decision"] == "fail", answer
    assert (answer["runs"], answer["passes"], answer["hard_failures"]) == (30, 21, 0)
    assert answer["baseline"]["runs"] == 30
    assert answer["baseline"]["pass_rate"] == 1.0
    assert set(answer) >= {"pass_rate", "lower_bound", "reason"}
    assert argo_phase(status, json.dumps(answer).encode()) == "Failed"  # the shipped template
    # The collector's own verdict lines (with decided_at) give the CLI the same answer.
    lines = tmp_path / "verdicts.jsonl"
    wait_for(lambda: len(lines.read_text(encoding="utf-8").splitlines()) == 60, what="60 lines")
    cli = CliRunner().invoke(
        main,
        ["gate", str(lines), "--agent", "refund", "--variant", "canary", "--baseline", "stable",
         "--min-runs", "20", "--margin", "0.05", "--window", "10m", "--format", "json"],
    )  # fmt: skip
    assert cli.exit_code == 1, cli.output
    assert json.loads(cli.output) == answer


def test_policy_violation_fails_at_once_and_unknown_is_inconclusive(
    gated: Collector, sink: Sink
) -> None:
    _send(gated.http_port, "canary", policy=True)
    wait_for(lambda: gated.stats.traces_decided == 1, what="a decision")
    status, answer = _gate(gated.http_port, "agent=refund&variant=canary&window=10m")
    assert (status, answer["decision"], answer["hard_failures"]) == (200, "fail", 1)
    assert "F-POLICY-TEST" in answer["reason"]
    status, answer = _gate(gated.http_port, "agent=nobody&variant=canary")
    assert (status, answer["decision"]) == (200, "inconclusive")
    assert "no judged runs of agent 'nobody'" in answer["reason"]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("variant=canary", "agent"),
        ("agent=refund&variant=canary&window=ten", "window"),
        ("agent=refund&variant=canary&min_runs=-1", "min_runs"),
        ("agent=refund&variant=canary&threshold=1.2", "threshold"),
        ("agent=refund&variant=canary&variant=stable", "variant"),
    ],
)
def test_malformed_parameters_answer_400_naming_them(
    gated: Collector, sink: Sink, query: str, parameter: str
) -> None:
    status, answer = _gate(gated.http_port, query)
    assert status == 400
    assert answer["parameter"] == parameter
    assert answer["error"].startswith(f"{parameter}: ")
