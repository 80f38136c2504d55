"""Builders for gate tests: verdict records as the collector writes them, and the way
Argo Rollouts reads a ``web`` metric.

``argo_web_result`` evaluates an AnalysisTemplate's ``jsonPath`` and conditions the way
Argo Rollouts' web provider does (metricproviders/webmetric): the answer's body is decoded
as JSON, the ``jsonPath`` template (Kubernetes JSONPath, ``{$.field}``) selects a value,
a string result is used as is, and ``successCondition`` / ``failureCondition`` are expr
expressions over ``result``. Argo is Go and cannot run here; this implements the subset
the shipped templates use (a ``{$.a.b}`` path, ``result == "..."`` / ``!=``), and refuses
anything else, so a template using more cannot pass unnoticed. A non-2xx answer is a
measurement *error* in Argo, not a failure: reported as "error".
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from tracejudge.engine.verdict import Finding, Layer, Verdict
from tracejudge.gate import GateRun, run_of
from tracejudge.report.records import VerdictRecord

TEMPLATE = Path(__file__).resolve().parents[2] / "collector" / "argo" / "analysis-template.yaml"
"""The AnalysisTemplate the project ships."""

_PATH = re.compile(r"^\{\$((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\}$")
_COND = re.compile(r'^result\s*(==|!=)\s*"([^"]*)"$')


def argo_web_result(
    status: int, body: bytes, json_path: str, success: str, failure: str | None = None
) -> str:
    """Argo's phase for one measurement: Successful, Failed, Inconclusive or Error."""
    if not 200 <= status < 300:
        return "Error"
    m = _PATH.match(json_path)
    if m is None:
        raise ValueError(f"jsonPath outside the supported subset: {json_path!r}")
    value: Any = json.loads(body)
    for key in m.group(1).split(".")[1:]:
        if not isinstance(value, dict) or key not in value:
            return "Error"  # Argo: the path selects nothing
        value = value[key]
    result = value if isinstance(value, str) else json.dumps(value)

    def holds(cond: str) -> bool:
        c = _COND.match(cond.strip())
        if c is None:
            raise ValueError(f"condition outside the supported subset: {cond!r}")
        return (result == c.group(2)) == (c.group(1) == "==")

    if holds(success):
        return "Successful"
    if failure is not None and holds(failure):
        return "Failed"
    return "Inconclusive" if failure is not None else "Failed"


def shipped_metric() -> dict[str, Any]:
    """The gate metric of the shipped AnalysisTemplate (its conditions and web provider)."""
    doc = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    assert doc["kind"] == "AnalysisTemplate"
    (metric,) = doc["spec"]["metrics"]
    assert isinstance(metric, dict)
    return metric


def argo_phase(status: int, body: bytes) -> str:
    """Argo's phase for one answer of ``GET /v1/gate``, read with the shipped template."""
    m = shipped_metric()
    return argo_web_result(
        status, body, m["provider"]["web"]["jsonPath"], m["successCondition"], m["failureCondition"]
    )


def verdict(
    agent: str,
    variant: str,
    outcome: str,
    n: int,
    *,
    policy: bool = False,
    decided_at: float | None = None,
) -> dict[str, Any]:
    """The JSON line of run ``n``: ``outcome`` pass/warn/fail/error; a failure is a silent
    outcome failure unless ``policy`` (a hard-gate policy violation)."""
    findings = []
    if outcome == "fail":
        layer: Layer = "policy" if policy else "outcome"
        code = "F-POLICY-FORBIDDEN-TOOL" if policy else "F-OUTCOME-CLAIM-UNSUPPORTED"
        findings.append(Finding(code, "fail", layer, "r", (f"{n:016x}",), "x"))
    v = Verdict(
        trace_id=f"{n:032x}",
        root_span_id=f"{n:016x}",
        verdict=outcome,  # type: ignore[arg-type]
        layers={"policy": "fail" if policy else "pass"},
        agent=agent,
        variant=variant,
        primary=findings[0] if findings else None,
        findings=findings,
    )
    d = v.to_dict()
    if decided_at is not None:
        d["decided_at"] = decided_at
    return d


def run(agent: str, variant: str, outcome: str, n: int, **kw: Any) -> GateRun:
    """The gate's view of ``verdict(...)``, through the public JSON."""
    from tracejudge.report.records import parse_record

    rec: VerdictRecord = parse_record(verdict(agent, variant, outcome, n, **kw), "test")
    return run_of(rec)
