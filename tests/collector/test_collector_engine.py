"""The collector with the real rules engine and the real instrumented refund agent.

The agent runs as its own process (real OpenAI SDK against tracejudge's scripted model
server, real OTLP/HTTP exporter) and exports to an in-process collector judging with
examples/refund/rules.yaml; the stamped spans land in a real OTLP receiver.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.collector.collector_support import Sink, attrs, wait_for
from tests.support.guards import PROCESS_S
from tracejudge import semconv as sc
from tracejudge.collector import Collector, load_judge

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "refund" / "rules.yaml"


def _run_agent(variant: str, http_port: int) -> str:
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{http_port}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": "refund-agent-test",
    }
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "refund" / "agent.py"), "--variant", variant],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_S, check=True,
    ).stdout  # fmt: skip
    match = re.search(r"trace: ([0-9a-f]{32})", out)
    assert match, out
    return match.group(1)


@pytest.mark.parametrize(
    ("variant", "verdict", "code"),
    [("silent_failure", "fail", "F-OUTPUT-UNSUPPORTED_CLAIM"), ("wrong_order", "fail", None)],
)
def test_refund_failures_are_stamped(
    variant: str,
    verdict: str,
    code: str | None,
    collector_factory: Callable[..., Collector],
    sink: Sink,
) -> None:
    """An agent that claims a refund it never made (or refunds the wrong order) reaches the
    backend with verdict=fail on its root, the failure code on the proving span, and one
    evaluation event per rule outcome."""
    judge = load_judge(RULES)
    c = collector_factory(judge=judge, decision_wait_after_root=0.3)
    trace_id = _run_agent(variant, c.http_port)
    wait_for(
        lambda: any(sc.TRACEJUDGE_VERDICT in attrs(s) for s in sink.spans()),
        what="judged root",
    )
    spans = {s.span_id.hex(): s for s in sink.spans() if s.trace_id.hex() == trace_id}
    (root,) = [s for s in spans.values() if sc.TRACEJUDGE_VERDICT in attrs(s)]
    got = attrs(root)
    assert got[sc.TRACEJUDGE_VERDICT] == verdict
    if code is not None:
        assert got[sc.TRACEJUDGE_FAILURE_CODE] == code
    assert got[sc.TRACEJUDGE_RULES_VERSION] == judge.ruleset.version  # type: ignore[attr-defined]
    failure_span = spans[got[sc.TRACEJUDGE_FAILURE_SPAN_ID]]
    assert got[sc.TRACEJUDGE_FAILURE_CODE] in attrs(failure_span)[sc.TRACEJUDGE_FINDING_CODES]
    events = [
        e for s in spans.values() for e in s.events if e.name == sc.EVENT_GEN_AI_EVALUATION_RESULT
    ]
    assert events
    labels = {kv.value.string_value for e in events for kv in e.attributes
              if kv.key == sc.GEN_AI_EVALUATION_SCORE_LABEL}  # fmt: skip
    assert "fail" in labels
    assert c.stats.runs == {verdict: 1}


@pytest.mark.parametrize(
    ("variant", "verdict", "code"),
    [("healthy", "pass", None), ("half_amount", "warn", "F-BASELINE-ARG_DRIFT")],
)
def test_baselines_directory_feeds_baseline_rules(
    variant: str,
    verdict: str,
    code: str | None,
    collector_factory: Callable[..., Collector],
    sink: Sink,
) -> None:
    """With --baselines the collector judges like `tracejudge eval --baselines`: the healthy
    run passes, and a refund of half the amount drifts from the recorded baseline."""
    judge = load_judge(RULES, ROOT / "examples" / "refund" / "baselines")
    c = collector_factory(judge=judge, decision_wait_after_root=0.3)
    trace_id = _run_agent(variant, c.http_port)
    wait_for(
        lambda: any(sc.TRACEJUDGE_VERDICT in attrs(s) for s in sink.spans()),
        what="judged root",
    )
    (root,) = [
        s
        for s in sink.spans()
        if s.trace_id.hex() == trace_id and sc.TRACEJUDGE_VERDICT in attrs(s)
    ]
    assert attrs(root)[sc.TRACEJUDGE_VERDICT] == verdict
    assert attrs(root).get(sc.TRACEJUDGE_FAILURE_CODE) == code


def test_without_baselines_the_log_says_which_rules_do_not_apply(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``serve --rules`` without ``--baselines``: one warning at start names the baseline
    rules that will be ``not_applicable`` (never a silently skipped rule); with a
    directory, none."""
    with caplog.at_level("WARNING", logger="tracejudge.collector.processors.judge"):
        load_judge(RULES)
    (record,) = [r for r in caplog.records if "baseline" in r.getMessage()]
    assert "matches-reviewed-run do not apply" in record.getMessage()
    caplog.clear()
    with caplog.at_level("WARNING", logger="tracejudge.collector.processors.judge"):
        load_judge(RULES, ROOT / "examples" / "refund" / "baselines")
    assert not [r for r in caplog.records if "baseline" in r.getMessage()]
