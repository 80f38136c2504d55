"""Reference metrics stay per rule when a rule set has several ``reference`` rules."""

from __future__ import annotations

import json
from typing import Any

from tests.engine.engine_runs import REFUND_TOOLS, make_run, refund_run, tool
from tracejudge.engine import Engine, load_rules_text


def _ruleset(*rules: dict[str, Any]) -> Any:
    return load_rules_text(json.dumps({"version": 1, "tools": REFUND_TOOLS, "rules": list(rules)}))


def _reference(rule_id: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    check = {"type": "reference", "mode": "superset", "args_mode": "ignore", "calls": calls}
    return {"id": rule_id, "layer": "trajectory", "severity": "warn", "check": check}


LOOKUP_ONLY = [{"tool": "lookup_order"}]
FULL_PATH = [{"tool": "lookup_order"}, {"tool": "refund_api.create"}, {"tool": "send_email"}]


def test_single_reference_rule_keeps_plain_metric_names() -> None:
    """The common case (one reference) keeps the names dashboards already use."""
    verdict = Engine(_ruleset(_reference("path", FULL_PATH))).judge(refund_run("no_refund"))
    assert set(verdict.metrics) == {
        "tool_selection_accuracy",
        "argument_correctness",
        "excess_step_ratio",
    }
    assert verdict.metrics["tool_selection_accuracy"] == 2 / 3


def test_several_reference_rules_each_keep_their_values() -> None:
    """Before, the last rule's values overwrote the first's: a 1.0 hid a 0.67."""
    rs = _ruleset(_reference("short", LOOKUP_ONLY), _reference("full", FULL_PATH))
    verdict = Engine(rs).judge(refund_run("no_refund"))
    assert verdict.metrics["short.tool_selection_accuracy"] == 1.0
    assert verdict.metrics["full.tool_selection_accuracy"] == 2 / 3
    assert verdict.metrics["short.excess_step_ratio"] == 2.0  # 3 calls against 1
    assert "tool_selection_accuracy" not in verdict.metrics
    assert verdict.to_dict()["metrics"] == verdict.metrics


def test_keys_depend_on_the_rule_set_not_on_which_rules_applied() -> None:
    """A rule skipped by its selector does not switch the other's keys back to plain."""
    skipped = _reference("refunds", FULL_PATH)
    skipped["select"] = {"tools_present": ["refund_api.create"]}
    rs = _ruleset(_reference("lookups", LOOKUP_ONLY), skipped)

    verdict = Engine(rs).judge(make_run([tool("lookup_order", {"customer_id": "u1"}, {})]))
    assert set(verdict.metrics) == {
        "lookups.tool_selection_accuracy",
        "lookups.argument_correctness",
        "lookups.excess_step_ratio",
    }
