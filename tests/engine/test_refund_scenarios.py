"""The four refund scenarios from the product brief, judged by examples/refund/rules.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.engine_runs import FINAL, refund_run, span
from tracejudge.engine import BaselineStore, Engine, RuleSet, load_rules

RULES = Path(__file__).resolve().parents[2] / "examples" / "refund" / "rules.yaml"


@pytest.fixture
def ruleset() -> RuleSet:
    """The shipped example rules."""
    return load_rules(RULES)


@pytest.fixture
def engine(ruleset: RuleSet, tmp_path: Path) -> Engine:
    """An engine whose baseline store holds the healthy run, as a reviewer would record it."""
    store = BaselineStore(tmp_path / "baselines")
    store.record(refund_run("healthy"), ruleset.tools)
    return Engine(ruleset, store)


def test_healthy_refund_passes(engine: Engine) -> None:
    """The reference behaviour must pass every layer, or the example rules are wrong."""
    v = engine.judge(refund_run("healthy"))
    assert v.verdict == "pass", [f.to_dict() for f in v.findings]
    assert v.layers == {
        "outcome": "pass",
        "trajectory": "pass",
        "policy": "pass",
        "budget": "pass",
    }
    assert v.primary is None


def test_claimed_refund_that_never_happened(engine: Engine) -> None:
    """The headline silent failure: the answer claims a refund, no refund call ran."""
    v = engine.judge(refund_run("no_refund"))
    assert v.verdict == "fail"
    assert v.primary is not None
    assert v.primary.code == "F-OUTPUT-UNSUPPORTED_CLAIM"
    assert v.primary.span_ids == (FINAL,)
    assert v.layers["outcome"] == "fail"
    codes = {f.code for f in v.findings}
    assert "F-BASELINE-MISSING_CALL" in codes


def test_wrong_order_refunded(engine: Engine) -> None:
    """Order A was returned by the lookup, but B is the duplicate: the refund step is primary."""
    run = refund_run("wrong_order")
    v = engine.judge(run)
    assert v.verdict == "fail"
    assert v.primary is not None
    assert v.primary.code == "F-ACTION-ARG-ENTITY_BINDING"
    assert v.primary.span_ids == (span(5),)
    assert run.steps[5].span_id == span(5)
    assert "A-100" in v.primary.explanation
    assert v.layers["trajectory"] == "fail"


def test_half_amount_is_baseline_drift(engine: Engine) -> None:
    """Refunding half the amount passes the hard gates but drifts from the reviewed baseline."""
    v = engine.judge(refund_run("half_amount"))
    assert v.verdict == "warn"
    assert v.primary is not None
    assert v.primary.code == "F-BASELINE-ARG_DRIFT"
    assert v.primary.severity == "warn"
    assert v.primary.span_ids == (span(5),)
    assert "amount" in v.primary.explanation


def test_verdict_json_shape(engine: Engine) -> None:
    """Others consume Verdict.to_dict(): primary cites the span and the rules version."""
    d = engine.judge(refund_run("wrong_order")).to_dict()
    assert d["verdict"] == "fail"
    assert d["primary"]["code"] == "F-ACTION-ARG-ENTITY_BINDING"
    assert d["primary"]["span_id"] == span(5)
    assert d["rules_version"].startswith("sha256:")
    assert d["case_id"] == "dup-charge-1"


def test_claim_primary_when_answer_lives_on_the_agent_span(engine: Engine) -> None:
    """Builders put the final answer on the invoke_agent (root) span: the claim still wins.

    The missing refund call also cites the root, but it is an absence; the claim is what
    the customer read.
    """
    run = refund_run("no_refund")
    run.final_answer_span_id = run.root_span_id
    v = engine.judge(run)
    assert v.primary is not None
    assert v.primary.code == "F-OUTPUT-UNSUPPORTED_CLAIM"
    assert v.primary.span_ids == (run.root_span_id,)
    missing = [f for f in v.findings if f.code == "F-BASELINE-MISSING_CALL"]
    assert missing
    assert missing[0].absent
