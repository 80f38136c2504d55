"""Tool names in rules are checked against ``tools:`` (a misspelt tool is a silent pass)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.engine.engine_runs import make_run, rules_text, tool
from tracejudge.engine import Engine, RulesError, load_rules, load_rules_text

ROOT = Path(__file__).resolve().parents[2]


def _errors(text: str) -> list[str]:
    with pytest.raises(RulesError) as info:
        load_rules_text(text)
    return info.value.errors


def test_undeclared_tool_fails_with_path_and_suggestion() -> None:
    """The example from the rules contract: the path of the field and the closest name."""
    text = (ROOT / "examples" / "refund" / "rules.yaml").read_text()
    bad = text.replace(
        "  - id: policy-before-refund\n    layer: trajectory\n"
        "    check: {type: precedence, before: check_policy, after: refund_api.create}",
        "  - id: policy-before-refund\n    layer: trajectory\n"
        "    check: {type: precedence, before: check_policy, after: refund_api.creat}",
    )
    assert bad != text
    errors = _errors(bad)
    assert errors == [
        "rules[5].check.after: 'refund_api.creat' is not declared in tools "
        "(did you mean 'refund_api.create'?)"
    ]


@pytest.mark.parametrize(
    ("check", "path"),
    [
        ({"type": "max_calls", "limits": {"send_emial": 1}}, "rules[0].check.limits"),
        ({"type": "approval", "tools": ["refund_api.create", "refnd"]}, "rules[0].check.tools[1]"),
        (
            {"type": "state", "expect": [{"tool": "refund", "path": "status", "equals": "ok"}]},
            "rules[0].check.expect[0].tool",
        ),
        (
            {"type": "step_pattern", "steps": [{"kind": "lookup"}, {"tool": "lookup"}]},
            "rules[0].check.steps[1].tool",
        ),
        (
            {"type": "sensitive_data", "allow": {"email": ["send_mail"]}},
            "rules[0].check.allow.email[0]",
        ),
        (
            {"type": "baseline", "arguments": {"refund_api": {"amount": "ignore"}}},
            "rules[0].check.arguments",
        ),
        (
            {"type": "reference", "calls": [{"tool": "lookup_orders"}]},
            "rules[0].check.calls[0].tool",
        ),
    ],
)
def test_every_place_that_names_a_tool_is_checked(check: dict[str, Any], path: str) -> None:
    """A rule that never finds its tool passes every run (max_calls, approval, state...)."""
    errors = _errors(rules_text(check))
    assert len(errors) == 1
    assert errors[0].startswith(f"{path}: ")
    assert "is not declared in tools" in errors[0]


def test_selector_tools_present_is_checked() -> None:
    """A selector on a misspelt tool makes the rule not_applicable on every run."""
    errors = _errors(
        rules_text(
            {"type": "required_steps", "tools": ["send_email"]},
            select={"tools_present": ["refund"]},
        )
    )
    assert errors == ["rules[0].select.tools_present[0]: 'refund' is not declared in tools"]


def test_forbidding_an_undeclared_tool_is_allowed() -> None:
    """Forbidden tools are usually ones the agent must not have, so they are not declared."""
    rs = load_rules_text(rules_text({"type": "forbidden_steps", "tools": ["wire_transfer"]}))
    assert rs.warnings == ()
    rs = load_rules_text(
        rules_text({"type": "tool_access", "deny": ["delete_account"]}, layer="policy")
    )
    assert rs.warnings == ()


def test_forbidding_a_near_miss_of_a_declared_tool_warns() -> None:
    """A deny list entry one typo from a real tool forbids nothing the agent can call."""
    rs = load_rules_text(
        rules_text({"type": "tool_access", "deny": ["refund_api.creat"]}, layer="policy")
    )
    assert rs.warnings == (
        "rules[0].check.deny[0]: 'refund_api.creat' is not declared in tools "
        "(did you mean 'refund_api.create'?)",
    )


def test_without_tools_section_names_load_with_one_warning() -> None:
    """No declarations, nothing to check against: load, but say the names went unchecked."""
    doc = json.loads(rules_text({"type": "max_calls", "limits": {"send_emial": 1}}))
    del doc["tools"]
    rs = load_rules_text(json.dumps(doc))
    assert len(rs.warnings) == 1
    assert rs.warnings[0].startswith("tools: not declared")
    assert "'send_emial'" in rs.warnings[0]
    # and the rule still judges (the warning does not change behaviour)
    verdict = Engine(rs).judge(make_run([tool("send_email"), tool("send_email")]))
    assert verdict.verdict == "pass"


def test_rules_check_prints_warnings_and_still_exits_zero(tmp_path: Path) -> None:
    """`tracejudge rules check` is where an author sees that names were not checked."""
    from tracejudge.cli import main

    doc = json.loads(rules_text({"type": "required_steps", "tools": ["send_email"]}))
    del doc["tools"]
    path = tmp_path / "rules.yaml"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["rules", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert "warning" in result.output
    assert "tools: not declared" in result.output
    assert "1 rules file(s) valid" in result.output


def test_shipped_example_declares_every_tool_it_names() -> None:
    """The refund example is what people copy: it loads with no warnings."""
    rs = load_rules(ROOT / "examples" / "refund" / "rules.yaml")
    assert rs.warnings == ()


def test_eval_prints_rule_warnings_before_judging(tmp_path: Path) -> None:
    """Whoever runs `tracejudge eval` in CI sees unchecked tool names too, not only authors
    who remember to run `rules check`; the warning never changes the exit code."""
    from tracejudge.cli import main

    doc = json.loads(rules_text({"type": "required_steps", "tools": ["send_email"]}))
    del doc["tools"]
    path = tmp_path / "rules.yaml"
    path.write_text(json.dumps(doc))
    trace = ROOT / "examples" / "refund" / "traces" / "healthy.json"
    result = CliRunner().invoke(main, ["eval", "--rules", str(path), str(trace)])
    assert "tracejudge eval: warning:" in result.output
    assert "tools: not declared" in result.output
    assert result.exit_code == 0, result.output
