"""The verdict metrics in Prometheus text format, their bounded labels, and ``/metrics``
content negotiation.

Label bounds and the text format are checked on ``Stats`` directly; the endpoint on a real
collector judging with the real engine (tests/support/verdict_runs.py rules), fed by the
real instrumentation through the OTel SDK's OTLP/HTTP exporter. The format is also parsed
by the real ``promtool`` and scraped by a real Prometheus in tests/e2e/test_prometheus.py.
"""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from tests.collector.judged_support import management, otlp_status
from tests.support.guards import IO_S
from tracejudge.collector import Collector
from tracejudge.collector.config import ConfigError, build_config
from tracejudge.collector.telemetry.exposition import (
    DECISION_LATENCY,
    FINDINGS,
    HARD_GATE_FAILURES,
    RUNS,
    label_name,
    metric_name,
    render,
    wants_prometheus,
)
from tracejudge.collector.telemetry.metric_labels import OVERFLOW, MetricLabels
from tracejudge.collector.telemetry.stats import LATENCY_BUCKETS, Stats
from tracejudge.engine.verdict import Finding, LayerResult, Overall, Verdict

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Samples of a text exposition, keyed by (name, labels); comments are checked too."""
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* \S", line), line
            continue
        m = _SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        raw = m.group(3) or ""
        labels = frozenset((k, v.encode().decode("unicode_escape")) for k, v in _LABEL.findall(raw))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def _v(
    variant: str,
    verdict: Overall,
    *findings: Finding,
    case_id: str | None = None,
    agent_version: str | None = None,
) -> Verdict:
    layers: dict[str, LayerResult] = {}
    if any(f.layer == "policy" and f.severity == "fail" for f in findings):
        layers["policy"] = "fail"
    return Verdict(
        "ab" * 16, "01" * 8, verdict, layers, agent="support", variant=variant,
        case_id=case_id, findings=list(findings), agent_version=agent_version,
    )  # fmt: skip


POLICY = Finding("F-POLICY-UNAUTHORIZED_TOOL", "fail", "policy", "p", ("01" * 8,), "no")
TRAJ = Finding("F-ACTION-MISSING_STEP", "fail", "trajectory", "t", ("01" * 8,), "missing")


def test_names_follow_the_otel_to_prometheus_rules() -> None:
    assert RUNS == "tracejudge_runs_total"
    assert HARD_GATE_FAILURES == "tracejudge_hard_gate_failures_total"
    assert DECISION_LATENCY == "tracejudge_collector_decision_latency_seconds"
    assert metric_name("a.b-c", unit="s", counter=True) == "a_b_c_seconds_total"
    assert label_name("gen_ai.agent.name") == "gen_ai_agent_name"


def test_label_values_are_bounded_and_case_ids_become_slices() -> None:
    """At most max_values distinct values per label (then _overflow); case ids map to the
    first matching slice, ``other`` when none matches, empty without a case id."""
    labels = MetricLabels({"refunds": ["refund-*"], "money": ["refund-9*", "billing-*"]}, 2, 8)
    assert labels.identity("a", "v1", None, "refund-91") == ("a", "v1", "", "refunds")
    assert labels.identity("b", "v2", "1", "billing-7") == ("b", "v2", "1", "money")
    assert labels.identity("c", "v1", "2", "misc") == (OVERFLOW, "v1", "2", "other")
    assert labels.identity("a", "v3", "a-very-long-version", None) == ("a", OVERFLOW, OVERFLOW, "")
    assert labels.identity("a", "v2", "1", "") == ("a", "v2", "1", "")
    assert MetricLabels().case_slice("refund-1") == ""  # no slices configured: no label
    with pytest.raises(ValueError, match="max_values"):
        MetricLabels(max_values=0)


def test_case_slices_config_is_checked() -> None:
    cfg = build_config({"metrics_case_slices": {"refunds": "refund-*"}}, {})
    assert cfg.metrics_case_slices == {"refunds": ["refund-*"]}
    with pytest.raises(ConfigError, match="metrics_case_slices: 'other'"):
        build_config({"metrics_case_slices": {"other": ["x"]}}, {})
    with pytest.raises(ConfigError, match=r"metrics_case_slices\.refunds"):
        build_config({"metrics_case_slices": {"refunds": [1]}}, {})
    with pytest.raises(ConfigError, match="metrics_max_label_values"):
        build_config({"metrics_max_label_values": 0}, {})


def test_text_exposition_counts_runs_findings_hard_gates_and_latency() -> None:
    """Every verdict lands in its identity's series; only a hard-gate policy failure
    counts in tracejudge_hard_gate_failures_total; the histogram is cumulative."""
    stats = Stats([], MetricLabels({"refunds": ["refund-*"]}))
    stats.verdict(_v("stable", "pass", case_id="refund-1", agent_version="1.4"))
    stats.verdict(_v("canary", "fail", TRAJ, case_id="refund-2", agent_version="1.5"))
    stats.verdict(_v("canary", "fail", POLICY, TRAJ, case_id="x", agent_version="1.5"))
    stats.verdict(_v('we"ird\nvariant\\', "pass"))
    for seconds in (0.001, 0.02, 0.02, 7.0, 99.0):
        stats.latency(seconds)
    text = render(stats)
    samples = parse_exposition(text)

    def ident(variant: str, version: str, case_slice: str) -> set[tuple[str, str]]:
        return {
            ("gen_ai_agent_name", "support"),
            ("tracejudge_variant_id", variant),
            ("gen_ai_agent_version", version),
            ("tracejudge_case_slice", case_slice),
        }

    def get(name: str, labels: set[tuple[str, str]]) -> float:
        return samples[(name, frozenset(labels))]

    canary = ident("canary", "1.5", "refunds")
    assert get(RUNS, ident("stable", "1.4", "refunds") | {("tracejudge_verdict", "pass")}) == 1
    assert get(RUNS, canary | {("tracejudge_verdict", "fail")}) == 1
    assert get(RUNS, ident("canary", "1.5", "other") | {("tracejudge_verdict", "fail")}) == 1
    assert get(RUNS, ident('we"ird\nvariant\\', "", "") | {("tracejudge_verdict", "pass")}) == 1
    code = ("tracejudge_failure_code", "F-ACTION-MISSING_STEP")
    assert get(FINDINGS, canary | {code}) == 1
    hard = [(k, n) for k, n in samples.items() if k[0] == HARD_GATE_FAILURES]
    assert hard == [
        (
            (
                HARD_GATE_FAILURES,
                frozenset(
                    ident("canary", "1.5", "other")
                    | {("tracejudge_failure_code", "F-POLICY-UNAUTHORIZED_TOOL")}
                ),
            ),
            1.0,
        )
    ]
    buckets = {
        dict(labels)["le"]: n for (name, labels), n in samples.items() if name.endswith("_bucket")
    }
    assert len(buckets) == len(LATENCY_BUCKETS) + 1
    assert (buckets["0.005"], buckets["0.025"], buckets["5.0"], buckets["10.0"]) == (1, 3, 3, 4)
    assert buckets["+Inf"] == 5 == get(DECISION_LATENCY + "_count", set())
    assert get(DECISION_LATENCY + "_sum", set()) == pytest.approx(106.041)
    assert "# TYPE tracejudge_runs_total counter" in text
    assert f"# TYPE {DECISION_LATENCY} histogram" in text
    stats.shutdown()


@pytest.mark.parametrize(
    ("accept", "fmt", "text"),
    [
        (None, None, False),
        ("*/*", None, False),
        ("application/json", None, False),
        ("text/plain;version=0.0.4;q=0.3,*/*;q=0.2", None, True),
        (
            "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.2",
            None,
            True,
        ),
        ("application/json, text/plain", None, False),
        ("*/*", "prometheus", True),
        ("text/plain", "json", False),
    ],
)
def test_content_negotiation(accept: str | None, fmt: str | None, text: bool) -> None:
    assert wants_prometheus(accept, fmt) is text


def _get(port: int, path: str, accept: str | None = None) -> tuple[str, bytes]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if accept is not None:
        req.add_header("Accept", accept)
    with urllib.request.urlopen(req, timeout=IO_S) as r:
        return r.headers["Content-Type"], r.read()


def test_metrics_endpoint_answers_prometheus_text_or_json(judged: Collector) -> None:
    """A scrape (Accept: text/plain) gets the text format (or ``?format=prometheus``) on the
    management port; a plain GET keeps the JSON body existing readers parse."""
    scrape = "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4"
    ctype, body = _get(management(judged), "/metrics", scrape)
    assert ctype.startswith("text/plain; version=0.0.4")
    samples = parse_exposition(body.decode())
    base = {("gen_ai_agent_name", "support"), ("gen_ai_agent_version", "1.4.0")}

    def total(name: str, **want: str) -> float:
        return sum(
            n for (m, labels), n in samples.items()
            if m == name and base <= labels and set(want.items()) <= labels
        )  # fmt: skip

    assert total(RUNS, tracejudge_variant_id="stable", tracejudge_verdict="pass") == 25
    assert total(RUNS, tracejudge_variant_id="canary", tracejudge_verdict="pass") == 4
    assert total(RUNS, tracejudge_variant_id="canary", tracejudge_verdict="fail") == 3
    assert total(RUNS, tracejudge_case_slice="refunds") + total(
        RUNS, tracejudge_case_slice="other"
    ) == total(RUNS)
    assert total(HARD_GATE_FAILURES, tracejudge_variant_id="canary") == 1
    assert total(HARD_GATE_FAILURES, tracejudge_variant_id="stable") == 0
    assert total(FINDINGS, tracejudge_failure_code="F-ACTION-MISSING_STEP") == 2
    assert otlp_status(judged, "/metrics") == 404  # not on the OTLP port beside a management one
    _, health_body = _get(management(judged), "/metrics?format=prometheus")
    assert total(RUNS) == sum(
        n for (m, _), n in parse_exposition(health_body.decode()).items() if m == RUNS
    )
    ctype, body = _get(management(judged), "/metrics")
    assert ctype.startswith("application/json")
    doc = json.loads(body)
    assert doc["runs"] == {"pass": 29, "fail": 3}
    assert doc["traces_decided"] == 32


def test_verdict_lines_carry_the_agent_version_only_when_known() -> None:
    """Additive to the public JSON: ``agent_version`` appears only for a run naming one."""
    assert _v("canary", "pass", agent_version="1.5").to_dict()["agent_version"] == "1.5"
    assert "agent_version" not in _v("canary", "pass").to_dict()
