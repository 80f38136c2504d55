"""End to end with a real Prometheus: the shipped rules, and a scrape of a real
``tracejudge serve`` fed real OTel-exported runs.

- ``promtool check rules`` and ``promtool test rules`` on collector/prometheus/ (the unit
  tests of the recording and alert rules are collector/prometheus/rules_test.yaml);
  ``promtool check metrics`` on serve's own exposition.
- Prometheus (1 s scrape and rule interval) scrapes ``tracejudge serve --rules`` while a
  separate process exports runs with ``tracejudge.instrument()``'s OTLP exporter
  (tests/support/verdict_runs.py): the recorded pass rate and its Wilson bounds are the
  gate's for the same counts, a hard-gate policy failure is recorded and fires its alert,
  and the Flagger MetricTemplate queries, rendered as Flagger renders them, return the
  floats their thresholds are written for. The Flagger webhooks answer on the same serve.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.collector.test_prometheus_assets import flagger_query, metric_templates
from tests.e2e.backends import locate_binary
from tests.e2e.prometheus import PrometheusInstance, Sample, start_prometheus
from tests.support import verdict_runs
from tests.support.guards import IO_S, PROCESS_S, wait_for
from tests.support.ports import start_serve
from tracejudge.collector.telemetry.exposition import render
from tracejudge.collector.telemetry.metric_labels import MetricLabels
from tracejudge.collector.telemetry.stats import Stats
from tracejudge.engine.verdict import Finding, Verdict
from tracejudge.report.stats import wilson_interval

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "collector" / "prometheus"
RULE_FILES = [RULES_DIR / "recording-rules.yaml", RULES_DIR / "alert-rules.yaml"]


def _promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(locate_binary("promtool")), *args],
        cwd=RULES_DIR, input=stdin, capture_output=True, text=True, timeout=PROCESS_S, check=False,
    )  # fmt: skip


def test_promtool_checks_and_unit_tests_the_shipped_rules() -> None:
    checked = _promtool("check", "rules", *(p.name for p in RULE_FILES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 9 rules found" in checked.stdout + checked.stderr
    tested = _promtool("test", "rules", "rules_test.yaml")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout + tested.stderr


def test_promtool_accepts_the_exposition() -> None:
    """promtool's exposition parser and linter find nothing wrong with what serve writes,
    label values needing escapes and the shadow series included."""
    stats = Stats([], MetricLabels({"refunds": ["refund-*"]}))
    policy = Finding("F-POLICY-UNAUTHORIZED_TOOL", "fail", "policy", "p", ("01" * 8,), "no")
    stats.verdict(Verdict("ab" * 16, "01" * 8, "fail", {"policy": "fail"}, agent="a",
                          variant='q"\\\n', case_id="refund-1", findings=[policy]))  # fmt: skip
    stats.verdict(Verdict("cd" * 16, "02" * 8, "pass", {}, agent="a", variant="v"))
    shadow = Verdict("ef" * 16, "03" * 8, "pass", {}, agent="a", variant="v2", shadow=True)
    stats.verdict(shadow)  # the shadow series, with samples
    stats.shadow_pair(shadow, "diverged")
    stats.latency(0.03)
    text = render(stats)
    assert "tracejudge_shadow_pairs_total{" in text
    result = _promtool("check", "metrics", stdin=text)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "", result.stdout  # no lint findings either
    broken = _promtool("check", "metrics", stdin=text.replace("# TYPE", "# TYPO", 1) + "x{ 1\n")
    assert broken.returncode != 0  # the check can fail


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


def _decided(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=IO_S) as r:
        return int(json.loads(r.read())["traces_decided"])


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[int]:
    """``tracejudge serve`` judging with verdict_runs' rules, judged traces to a file;
    yields its HTTP port (OTLP/HTTP, /metrics, the gate and the Flagger webhooks)."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(verdict_runs.RULES, encoding="utf-8")
    config = tmp_path / "serve.yaml"
    config.write_text(
        f"rules: {rules}\ngrpc_port: 0\nhttp_port: 0\n"
        f"output: {tmp_path / 'judged.jsonl'}\n"
        "decision_wait_after_root: 0.2s\ndecision_wait: 5s\n"
        "metrics_case_slices:\n  refunds: ['refund-*']\n",
        encoding="utf-8",
    )
    proc, _, http_port = start_serve(
        [str(Path(sys.executable).with_name("tracejudge")), "serve", "--config", str(config)],
        tmp_path / "serve.log",
        cwd=ROOT,
    )
    try:
        _wait_ready(http_port, proc)
        yield http_port
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(PROCESS_S) == 0


def _export(port: int, *batches: str) -> None:
    """Runs exported by a separate process with the default OTLP/HTTP exporter."""
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": "support-agent-e2e",
    }
    subprocess.run(
        [sys.executable, "-m", "tests.support.verdict_runs", *batches],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_S, check=True,
    )  # fmt: skip


def _by_variant(samples: list[Sample]) -> dict[str, float]:
    return {labels.get("tracejudge_variant_id", ""): value for labels, value in samples}


def _equals(expected: dict[str, float]) -> Any:
    def check(samples: list[Sample]) -> bool:
        got = _by_variant(samples)
        return got.keys() == expected.keys() and all(
            abs(got[k] - v) <= 1e-9 for k, v in expected.items()
        )

    return check


def _hook(port: int, hook: str, metadata: dict[str, str]) -> int:
    body = {"name": "support", "namespace": "prod", "phase": "Progressing", "metadata": metadata}
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/gate/flagger/{hook}", data=json.dumps(body).encode()
    )
    try:
        with urllib.request.urlopen(req, timeout=IO_S) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_prometheus_records_pass_rate_and_hard_gate_failures_from_serve(
    serve: int, tmp_path: Path
) -> None:
    prom: PrometheusInstance = start_prometheus(
        [f"127.0.0.1:{serve}"], RULE_FILES, work_dir=tmp_path
    )
    try:
        prom.wait_for(
            'up{job="tracejudge"}', lambda s: [v for _, v in s] == [1.0], what="serve scraped"
        )
        _export(serve, "stable:pass:20", "canary:pass:7", "canary:fail:3")
        wait_for(lambda: _decided(serve) >= 30, what="serve deciding the 30 runs")
        # The canary's series are born with its runs: counted whole, not lost to increase().
        prom.wait_for(
            "agent_variant:tracejudge_pass_rate:ratio10m",
            _equals({"stable": 1.0, "canary": 0.7}),
            what="recorded pass rate",
        )
        low, high = wilson_interval(7, 10).low, wilson_interval(7, 10).high
        prom.wait_for(
            "agent_variant:tracejudge_pass_rate_lower:wilson95_10m",
            _equals({"stable": wilson_interval(20, 20).low, "canary": low}),
            what="recorded Wilson lower bound",
        )
        assert _by_variant(prom.query("agent_variant:tracejudge_pass_rate_upper:wilson95_10m"))[
            "canary"
        ] == pytest.approx(high, abs=1e-9)
        assert _by_variant(
            prom.query("agent_variant:tracejudge_hard_gate_failures:increase10m")
        ) == {"stable": 0.0, "canary": 0.0}
        # The case-slice label made it through the config file.
        slices = {lab["tracejudge_case_slice"] for lab, _ in prom.query("tracejudge_runs_total")}
        assert slices == {"refunds", "other"}

        templates = metric_templates()
        upper = flagger_query(
            templates["tracejudge-pass-rate-upper"], "1m", agent="support", variant="canary"
        )
        assert prom.query(upper)[0][1] == pytest.approx(high, abs=1e-9)
        hard_q = templates["tracejudge-hard-gate-failures"]
        canary_hard = flagger_query(hard_q, "10m", agent="support", variant="canary")
        assert prom.query(canary_hard) == [({}, 0.0)]  # 0, not "no values"

        # 7/10 against 0.5: interval [0.40, 0.89] straddles the bar, inconclusive: no rollback.
        meta = {"agent": "support", "variant": "canary", "threshold": "0.5", "min_runs": "5"}
        assert _hook(serve, "rollback", meta) == 409
        _export(serve, "canary:policy:1")
        prom.wait_for(
            "agent_variant:tracejudge_hard_gate_failures:increase10m",
            _equals({"stable": 0.0, "canary": 1.0}),
            what="recorded hard-gate failure",
        )
        assert prom.query(canary_hard) == [({}, 1.0)]
        stable_hard = flagger_query(hard_q, "10m", agent="support", variant="stable")
        assert prom.query(stable_hard) == [({}, 0.0)]
        alerts = prom.wait_for(
            'ALERTS{alertname="TracejudgeHardGateFailure",alertstate="firing"}',
            lambda s: len(s) == 1,
            what="hard-gate alert firing",
        )
        assert alerts[0][0]["tracejudge_variant_id"] == "canary"
        assert (_hook(serve, "rollback", meta), _hook(serve, "confirm-promotion", meta)) == (
            200,
            409,
        )
        # Each run's trace was forwarded (to the --output file) and timed in the histogram.
        prom.wait_for(
            "sum(tracejudge_collector_decision_latency_seconds_count)",
            lambda s: s == [({}, 31.0)],
            what="31 decision latencies",
        )
        p99 = prom.query("tracejudge:decision_latency_seconds:p99_5m")
        assert len(p99) == 1
        assert 0 < p99[0][1] <= 30
    finally:
        prom.stop()
