"""The shipped Prometheus rules, Grafana dashboard and Flagger manifests, checked for
structure: every series they query is one the collector exports or a rule records, with
labels those series have, and the dashboard shows what docs/collector.md promises, in
order (hard-gate status first, then pass rate with its interval, failure codes, latency).

Their PromQL is evaluated by the real Prometheus in tests/e2e/test_prometheus.py; this
test needs no binary, so a broken reference fails in the quick suite.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from tracejudge.collector.telemetry.exposition import (
    CODE_LABEL,
    DECISION_LATENCY,
    FINDINGS,
    HARD_GATE_FAILURES,
    IDENTITY_LABELS,
    QUEUE_DEPTH,
    RUNS,
    SPANS,
    STATE_LABEL,
    VERDICT_LABEL,
)

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "collector" / "prometheus"
DASHBOARD = ROOT / "collector" / "grafana" / "tracejudge-dashboard.json"
FLAGGER = ROOT / "collector" / "flagger"

EXPORTED = {
    RUNS: {*IDENTITY_LABELS, VERDICT_LABEL},
    FINDINGS: {*IDENTITY_LABELS, CODE_LABEL},
    HARD_GATE_FAILURES: {*IDENTITY_LABELS, CODE_LABEL},
    SPANS: {STATE_LABEL},
    QUEUE_DEPTH: set(),
    DECISION_LATENCY + "_bucket": {"le"},
    DECISION_LATENCY + "_sum": set(),
    DECISION_LATENCY + "_count": set(),
}
TARGET_LABELS = {"job", "instance"}
"""Labels Prometheus adds to every scraped series."""
_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "offset", "bool"}
_GROUPING = re.compile(r"\b(by|without|on|ignoring)\s*\(([^)]*)\)")
_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}")
_IDENT = re.compile(r"(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")


def references(expr: str) -> tuple[set[str], dict[str, set[str]], set[str]]:
    """(series names, labels matched per selector's series name, grouping labels) of a
    PromQL expression, by a small scan (strings, selectors, durations and groupings are
    taken out before identifiers are read)."""
    grouping: set[str] = set()
    for _, names in _GROUPING.findall(expr):
        grouping |= {n.strip() for n in names.split(",") if n.strip()}
    expr = _GROUPING.sub(" ", expr)
    matched: dict[str, set[str]] = {}
    for name, inner in _SELECTOR.findall(expr):
        labels = {m.group(1) for m in re.finditer(r"([a-zA-Z_]\w*)\s*(=~|!~|!=|=)", inner)}
        matched.setdefault(name, set()).update(labels)
    expr = _SELECTOR.sub(lambda m: f" {m.group(1) or ''} ", expr)
    expr = re.sub(r'"[^"]*"', " ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    expr = re.sub(r"\boffset\s+\w+", " ", expr)
    names = {
        m.group(1)
        for m in _IDENT.finditer(expr)
        if m.group(2) is None and m.group(1) not in _KEYWORDS and not m.group(1)[0].isdigit()
    }
    return names, matched, grouping


def _recorded() -> dict[str, set[str]]:
    """Recorded series -> their labels (the grouping of the rule), in file order."""
    out: dict[str, set[str]] = {}
    doc = yaml.safe_load((PROM / "recording-rules.yaml").read_text(encoding="utf-8"))
    for group in doc["groups"]:
        for rule in group["rules"]:
            name, expr = rule["record"], rule["expr"]
            assert name not in out, f"{name} recorded twice"
            used, matched, grouping = references(expr)
            known = {**EXPORTED, **out}
            assert used <= known.keys(), f"{name} reads unknown series {used - known.keys()}"
            for series, labels in matched.items():
                have = known[series] | TARGET_LABELS if series else set()
                assert labels <= have, f"{name}: {series} has no label {labels - have}"
            inputs = set().union(*(known[s] for s in used)) | TARGET_LABELS
            assert grouping <= inputs, f"{name} groups by missing labels {grouping - inputs}"
            by = re.search(r"\bby\s*\(([^)]*)\)", expr)
            if by:
                out[name] = {n.strip() for n in by.group(1).split(",")}
            else:  # arithmetic over recorded series keeps their labels
                out[name] = set().union(*(known[s] for s in used if s in out))
    return out


def _check_expr(where: str, expr: str, series: dict[str, set[str]]) -> set[str]:
    used, matched, grouping = references(expr)
    assert used, f"{where}: no series in {expr!r}"
    assert used <= series.keys(), f"{where}: unknown series {used - series.keys()}"
    for name, labels in matched.items():
        assert name, f"{where}: a selector without a metric name"
        assert labels <= series[name] | TARGET_LABELS, (where, name, labels - series[name])
    inputs = set().union(*(series[s] for s in used)) | TARGET_LABELS
    assert grouping <= inputs, f"{where}: groups by missing labels {grouping - inputs}"
    return used


def test_recording_rules_read_only_exported_or_recorded_series() -> None:
    recorded = _recorded()
    assert {
        "agent_variant:tracejudge_pass_rate:ratio10m",
        "agent_variant:tracejudge_pass_rate_lower:wilson95_10m",
        "agent_variant:tracejudge_pass_rate_upper:wilson95_10m",
        "agent_variant:tracejudge_hard_gate_failures:increase10m",
    } <= recorded.keys()
    assert recorded["agent_variant:tracejudge_pass_rate:ratio10m"] == set(IDENTITY_LABELS[:2])


def test_alert_rules_read_only_exported_or_recorded_series() -> None:
    series = {**EXPORTED, **_recorded()}
    doc = yaml.safe_load((PROM / "alert-rules.yaml").read_text(encoding="utf-8"))
    alerts = [r for g in doc["groups"] for r in g["rules"]]
    assert {a["alert"] for a in alerts} >= {"TracejudgeHardGateFailure", "TracejudgePassRateLow"}
    for rule in alerts:
        _check_expr(rule["alert"], rule["expr"], series)
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert rule["annotations"]["summary"]


def _panels() -> list[dict[str, Any]]:
    doc = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    panels: list[dict[str, Any]] = doc["panels"]
    return sorted(panels, key=lambda p: (p["gridPos"]["y"], p["gridPos"]["x"]))


def test_dashboard_panels_reference_recorded_series_in_the_promised_order() -> None:
    doc = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    series = {**EXPORTED, **_recorded()}
    variables = {v["name"] for v in doc["templating"]["list"]}
    panels = _panels()
    ids = [p["id"] for p in panels]
    assert len(set(ids)) == len(ids)
    # Grid: inside 24 columns, no two panels overlapping.
    cells: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        assert min(g["w"], g["h"]) > 0, p["title"]
        mine = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not cells & mine, f"{p['title']} overlaps another panel"
        cells |= mine
    used_by_panel: list[set[str]] = []
    for p in panels:
        assert p["datasource"]["uid"] == "${datasource}"
        used: set[str] = set()
        for t in p["targets"]:
            used |= _check_expr(p["title"], t["expr"], series)
            for var in re.findall(r"\$\{?(\w+)", t["expr"] + p["datasource"]["uid"]):
                assert var in variables, f"{p['title']}: ${var} is not a dashboard variable"
        used_by_panel.append(used)
    for v in doc["templating"]["list"]:
        if v["type"] == "query":
            m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", v["query"]["query"])
            assert m, v["query"]["query"]
            (name,) = _check_expr(v["name"], m.group(1), series)
            assert m.group(2) in series[name], f"${v['name']}: {name} has no {m.group(2)}"
    # The order docs/collector.md promises.
    assert used_by_panel[0] == {"agent_variant:tracejudge_hard_gate_failures:increase10m"}
    assert (panels[0]["gridPos"]["y"], panels[0]["gridPos"]["w"]) == (0, 24)
    assert used_by_panel[1] == {
        "agent_variant:tracejudge_pass_rate:ratio10m",
        "agent_variant:tracejudge_pass_rate_lower:wilson95_10m",
        "agent_variant:tracejudge_pass_rate_upper:wilson95_10m",
    }
    rest = [u for u in used_by_panel[2:] if "agent_variant:tracejudge_runs:increase10m" not in u]
    assert rest[0] == {"agent_variant_code:tracejudge_findings:increase10m"}
    assert rest[1] <= {n for n in series if "decision_latency" in n}


def flagger_query(template: str, interval: str, **variables: str) -> str:
    """A MetricTemplate query as Flagger renders it: ``{{ interval }}`` and
    ``{{ variables.NAME }}`` replaced (Flagger's docs' placeholders)."""
    out = template.replace("{{ interval }}", interval)
    for name, value in variables.items():
        out = out.replace("{{ variables." + name + " }}", value)
    assert "{{" not in out, f"unrendered placeholder in {out!r}"
    return out


def metric_templates() -> dict[str, str]:
    """MetricTemplate name -> query, from collector/flagger/metric-templates.yaml."""
    docs = yaml.safe_load_all((FLAGGER / "metric-templates.yaml").read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for doc in docs:
        assert (doc["kind"], doc["spec"]["provider"]["type"]) == ("MetricTemplate", "prometheus")
        out[doc["metadata"]["name"]] = doc["spec"]["query"]
    return out


def test_flagger_manifests_fit_together() -> None:
    """The templates query existing series; the Canary uses them with their variables and
    points its webhooks at the routes serve has."""
    series = {**EXPORTED, **_recorded()}
    templates = metric_templates()
    for name, query in templates.items():
        _check_expr(name, flagger_query(query, "10m", agent="a", variant="v"), series)
    canary = yaml.safe_load((FLAGGER / "canary.yaml").read_text(encoding="utf-8"))
    assert canary["kind"] == "Canary"
    analysis = canary["spec"]["analysis"]
    assert analysis["stepWeights"] == [5, 25]
    for metric in analysis["metrics"]:
        assert metric["templateRef"]["name"] in templates
        assert set(metric["templateVariables"]) == {"agent", "variant"}
    hooks = {h["type"]: h for h in analysis["webhooks"]}
    assert set(hooks) == {"confirm-promotion", "rollback"}
    for kind, hook in hooks.items():
        assert hook["url"].endswith(f"/v1/gate/flagger/{kind}")
        assert all(isinstance(v, str) for v in hook["metadata"].values())  # a string map
