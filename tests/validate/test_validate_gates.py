"""``--gate`` parsing and exit statuses (0 every gate holds, 1 one fails, 2 bad input), on
the hand-labelled set of validate_support.py (figures in test_validate_figures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.validate.validate_support import write_set
from tracejudge.cli import main
from tracejudge.report.stats import wilson_interval
from tracejudge.validate.gates import Gate, GateError, parse_gate


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["validate", *(str(a) for a in args)], catch_exceptions=False)


def test_parse_gate_forms() -> None:
    assert parse_gate("policy.false_pass<=0.05") == Gate(
        "policy.false_pass<=0.05", "policy", None, None, "false_pass", "", "<=", 0.05
    )
    assert parse_gate(" policy@team=a.false_fail_high < 10% ") == Gate(
        " policy@team=a.false_fail_high < 10% ", "policy", "team", "a", "false_fail", "high",
        "<", 0.1,
    )  # fmt: skip
    gate = parse_gate("task_success@task.agreement>=0.97")
    assert (gate.tag, gate.value, gate.metric, gate.op) == ("task", None, "agreement", ">=")
    gate = parse_gate("policy@model=gpt-4.1.undecided==0")  # a dot in the slice value
    assert (gate.tag, gate.value, gate.metric, gate.limit) == ("model", "gpt-4.1", "undecided", 0)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("policy.false_pass", "expected AXIS[@SLICE].METRIC OP LIMIT"),
        ("false_pass<=0.1", "expected AXIS[@SLICE].METRIC before <="),
        ("policy.false_pas<=0.1", "unknown metric 'false_pas'"),
        ("policy.false_pass<=zero", "the limit 'zero' is not a number"),
        ("policy@.false_pass<=0", "an axis, then optionally @TAG or @TAG=VALUE"),
        ("policy.false_pass<=inf", "the limit must be finite"),
    ],
)
def test_parse_gate_errors(text: str, says: str) -> None:
    with pytest.raises(GateError, match=r"^--gate .*: ") as raised:
        parse_gate(text)
    assert says in str(raised.value)


def test_wilson_interval_against_published_values() -> None:
    """Newcombe (1998), Stat. Med. 17:857, table I, method 3 (Wilson score, no continuity
    correction): 81/263, 15/148, 0/20, 1/29."""
    for (s, n), (low, high) in {
        (81, 263): (0.2553, 0.3662),
        (15, 148): (0.0624, 0.1605),
        (0, 20): (0.0, 0.1611),
        (1, 29): (0.0061, 0.1718),
    }.items():
        iv = wilson_interval(s, n)
        assert (round(iv.low, 4), round(iv.high, 4)) == (low, high)


def test_gates_pass_exit_0_and_a_failed_gate_exits_1(tmp_path: Path) -> None:
    """policy false pass is 1/5 = 0.2, false fail per team 1/2 (a) and 1/3 (b), task_success
    false pass 0/4 with Wilson upper bound 0.4899."""
    verdicts, labels = write_set(tmp_path)
    base = ("--labels", labels, "--verdicts", verdicts)
    holding = (
        "policy.false_pass<=0.2",
        "policy@team.false_fail<=0.5",
        "task_success.false_pass_high<=0.5",
        "policy.agreement>=50%",
    )
    result = _run(*base, *(a for g in holding for a in ("--gate", g)))
    assert result.exit_code == 0, result.output
    assert "gate pass: policy@team.false_fail<=0.5: policy (team=a) false_fail = 0.5 (1/2;" in (
        result.output
    )
    assert "gate pass: policy@team.false_fail<=0.5: policy (team=b) false_fail = 0.3333 (1/3;" in (
        result.output
    )
    result = _run(*base, "--gate", "policy.false_pass<0.2", "--gate", "policy.agreement>=0.5")
    assert result.exit_code == 1, result.output
    assert (
        "gate FAIL: policy.false_pass<0.2: policy (all) false_pass = 0.2 (1/5; 95% CI "
        "0.036-0.624) breaks < 0.2"
    ) in result.output
    result = _run(*base, "--gate", "policy@team=a.false_pass<=0.25")
    assert result.exit_code == 1
    # a slice with nothing to measure fails: nothing measured is not a pass
    result = _run(*base, "--gate", "policy@team=c.false_pass<=1")
    assert result.exit_code == 1
    assert "no run labelled fail on policy (team=c): nothing to measure" in result.output


@pytest.mark.parametrize(
    ("gate", "says"),
    [
        ("permission.false_pass<=0", "no run is labelled on axis 'permission' (axes: policy, "),
        ("policy@squad=a.false_pass<=0", "no labelled run has tag 'squad' (tags: team)"),
        ("policy.false_passes<=0", "unknown metric 'false_passes'"),
    ],
)
def test_a_gate_naming_what_the_labels_lack_exits_2(tmp_path: Path, gate: str, says: str) -> None:
    verdicts, labels = write_set(tmp_path)
    result = _run("--labels", labels, "--verdicts", verdicts, "--gate", gate)
    assert result.exit_code == 2, result.output
    assert says in result.output
