"""The gate's decision (``tracejudge.gate.decide``) on sequences of judged runs.

The runs are built through the verdicts' public JSON (``Verdict.to_dict`` read back by
``parse_record``), the form the collector writes and ``tracejudge gate`` reads.
"""

from __future__ import annotations

import json
import random
from urllib.parse import parse_qsl, urlsplit

import pytest
import yaml

from tests.gate.gate_support import TEMPLATE, argo_phase, run, shipped_metric
from tracejudge.gate import GatePolicy, GateRun, decide
from tracejudge.gate.params import policy_from_query

AGENT = "refund"


def _stable(n: int, rng: random.Random, fail_rate: float = 0.02) -> list[GateRun]:
    return [
        run(AGENT, "stable", "fail" if rng.random() < fail_rate else "pass", i) for i in range(n)
    ]


def _first(decisions: list[str], what: str) -> int | None:
    return next((i + 1 for i, d in enumerate(decisions) if d == what), None)


def _sequence(canary_fail_rate: float, runs: int, seed: int) -> list[str]:
    """The gate's answer after each canary run, against 200 stable runs."""
    rng = random.Random(seed)
    stable = _stable(200, rng)
    canary: list[GateRun] = []
    policy = GatePolicy(AGENT, "canary", baseline="stable", min_runs=20, margin=0.05)
    out: list[str] = []
    for i in range(runs):
        outcome = "fail" if rng.random() < canary_fail_rate else "pass"
        canary.append(run(AGENT, "canary", outcome, 10_000 + i))
        out.append(decide(canary, stable, policy).decision)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_canary_with_30_percent_silent_failures_fails_within_bounded_runs(seed: int) -> None:
    """Against a 98% stable variant, a canary failing 30% of its runs silently (outcome
    failures, no policy violation) is failed within 60 runs, and never passed first."""
    decisions = _sequence(0.30, 60, seed)
    first_fail = _first(decisions, "fail")
    assert first_fail is not None, decisions
    assert "pass" not in decisions[:first_fail], decisions
    assert decisions[: 20 - 1] == ["inconclusive"] * 19  # below min_runs


@pytest.mark.parametrize("seed", range(5))
def test_healthy_canary_passes_and_is_never_failed(seed: int) -> None:
    """A canary as good as stable (2% failures) passes once its interval clears the bar
    (stable's rate minus the 5-point margin), and no answer on the way is a fail."""
    decisions = _sequence(0.02, 300, seed)
    assert "fail" not in decisions
    assert _first(decisions, "pass") is not None, decisions[-1]


def test_low_volume_is_inconclusive_with_the_count_in_the_reason() -> None:
    runs = [run(AGENT, "canary", "pass", i) for i in range(5)]
    d = decide(runs, None, GatePolicy(AGENT, "canary", min_runs=20))
    assert d.decision == "inconclusive"
    assert "5 runs" in d.reason
    assert "min_runs=20" in d.reason
    assert (d.candidate.runs, d.candidate.passes) == (5, 5)


def test_one_policy_violation_fails_at_once() -> None:
    """The first run is a hard-gate policy failure: fail, far below min_runs."""
    runs = [run(AGENT, "canary", "fail", 1, policy=True)]
    d = decide(runs, None, GatePolicy(AGENT, "canary", min_runs=50))
    assert d.decision == "fail"
    assert d.candidate.hard_failures == 1
    assert "F-POLICY-FORBIDDEN-TOOL" in d.reason
    assert f"{1:032x}" in d.reason
    # A policy failure in the *baseline* does not fail the candidate.
    base = [run(AGENT, "stable", "fail", 2, policy=True)]
    ok = decide([run(AGENT, "canary", "pass", 3)], base, GatePolicy(AGENT, "canary", "stable"))
    assert ok.decision == "inconclusive"


def test_unknown_agent_or_variant_is_inconclusive_with_a_reason() -> None:
    runs = [run(AGENT, "canary", "pass", i) for i in range(30)]
    d = decide(runs, None, GatePolicy("nobody", "canary"))
    assert d.decision == "inconclusive"
    assert "no judged runs of agent 'nobody' variant 'canary'" in d.reason
    assert d.candidate.pass_rate is None


def test_threshold_pass_fail_and_straddle() -> None:
    """Absolute threshold 0.9: 40/40 passes (lower bound 0.912); 20/40 fails (upper bound
    0.65); 36/40 straddles 0.9 and stays inconclusive."""
    policy = GatePolicy(AGENT, "v2", min_runs=20, threshold=0.9)

    def answer(passes: int) -> str:
        runs = [run(AGENT, "v2", "pass" if i < passes else "fail", i) for i in range(40)]
        return decide(runs, None, policy).decision

    assert (answer(40), answer(20), answer(36)) == ("pass", "fail", "inconclusive")


def test_warn_counts_as_passed_and_error_as_not() -> None:
    """As in ``tracejudge report``: a warn run passed every hard gate; an error run (not
    judgeable) never inflates the pass rate."""
    runs = [run(AGENT, "v", o, i) for i, o in enumerate(["warn", "error", "pass", "fail"])]
    d = decide(runs, None, GatePolicy(AGENT, "v", min_runs=1))
    assert (d.candidate.runs, d.candidate.passes) == (4, 2)


def test_window_keeps_recent_runs_only() -> None:
    old = [run(AGENT, "v", "fail", i, decided_at=1000.0 + i) for i in range(30)]
    new = [run(AGENT, "v", "pass", 100 + i, decided_at=5000.0 + i) for i in range(40)]
    policy = GatePolicy(AGENT, "v", window=600.0, min_runs=20)
    d = decide([*old, *new], None, policy)  # now: the newest run's time
    assert (d.decision, d.candidate.runs) == ("pass", 40)
    later = decide([*old, *new], None, policy, now=5000.0 + 600.5)  # the first new run left
    assert later.candidate.runs == 39


def test_bad_policy_values_are_refused() -> None:
    for kwargs in ({"min_runs": 0}, {"threshold": 1.5}, {"margin": -0.1}, {"window": 0.0}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            GatePolicy(AGENT, "v", **kwargs)


def test_argo_web_metric_reads_the_decision() -> None:
    """The shipped AnalysisTemplate (collector/argo/analysis-template.yaml), its
    ``jsonPath: "{$.decision}"``, ``successCondition: result == "pass"`` and
    ``failureCondition: result == "fail"``: pass → Successful, fail → Failed,
    inconclusive → Inconclusive (Argo pauses); a non-2xx answer is a measurement Error."""
    cases = {
        "Successful": [run(AGENT, "v", "pass", i) for i in range(40)],
        "Failed": [run(AGENT, "v", "fail", 1, policy=True)],
        "Inconclusive": [run(AGENT, "v", "pass", 1)],
    }
    for phase, runs in cases.items():
        body = json.dumps(decide(runs, None, GatePolicy(AGENT, "v")).to_dict()).encode()
        assert argo_phase(200, body) == phase, (phase, body)
    assert argo_phase(400, b'{"error": "threshold: ..."}') == "Error"

    # The template's URL, its arguments filled in as Argo does, is a query the gate takes.
    template = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    args = {a["name"]: a.get("value", f"my-{a['name']}") for a in template["spec"]["args"]}
    url = shipped_metric()["provider"]["web"]["url"]
    for name, value in args.items():
        url = url.replace("{{args." + name + "}}", value)
    parts = urlsplit(url)
    assert parts.path == "/v1/gate"
    policy = policy_from_query(dict(parse_qsl(parts.query)))
    assert (policy.agent, policy.variant, policy.baseline) == ("my-agent", "my-variant", "stable")
