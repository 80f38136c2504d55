"""``tracejudge validate``'s figures on the hand-labelled set of validate_support.py, every
rate computed by hand below; through click's CliRunner in-process, reading the set's
verdicts with ``--verdicts`` (the verdict JSON ``eval --output`` writes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.validate.validate_support import write_set
from tracejudge.cli import main


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["validate", *(str(a) for a in args)], catch_exceptions=False)


def _figures(result: Result) -> dict[tuple[str, str], dict[str, Any]]:
    doc = json.loads(result.output)
    out = {}
    for f in doc["figures"]:
        where = "all" if f["slice"] is None else "=".join(next(iter(f["slice"].items())))
        out[(f["axis"], where)] = f
    return out


def _rate(figure: dict[str, Any], metric: str) -> tuple[int, int]:
    return figure[metric]["count"], figure[metric]["of"]


def test_whole_verdict_figures_by_hand(tmp_path: Path) -> None:
    """Every axis reads the whole verdict (the default).

    policy (r1-r10 labelled): labelled fail r1 fail, r4 pass, r5 undecided, r7 fail, r8 fail
    -> false pass 1/5; labelled pass r2 fail, r3 pass, r6 not_evaluated, r9 pass, r10 fail
    -> false fail 2/5; agreement (3 fail-fail + 2 pass-pass) = 5/10; undecided 1/10;
    not evaluated 1/10.

    task_success (r7 null: 9 labelled): labelled fail r1 fail, r2 fail, r6 not_evaluated,
    r8 fail -> false pass 0/4; labelled pass r3 pass, r4 pass, r5 undecided, r9 pass, r10
    fail -> false fail 1/5; agreement (3 + 3) = 6/9.

    r11 is judged and not labelled: counted as unlabelled, not an error.
    """
    verdicts, labels = write_set(tmp_path)
    result = _run("--labels", labels, "--verdicts", verdicts, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert (doc["judged_runs"], doc["unlabelled_runs"]) == (11, 1)
    figures = _figures(result)
    policy = figures[("policy", "all")]
    assert policy["runs"] == 10
    assert policy["confusion"] == {
        "pass": {"pass": 2, "fail": 2, "undecided": 0, "not_evaluated": 1},
        "fail": {"pass": 1, "fail": 3, "undecided": 1, "not_evaluated": 0},
    }
    assert _rate(policy, "false_pass") == (1, 5)
    assert _rate(policy, "false_fail") == (2, 5)
    assert _rate(policy, "agreement") == (5, 10)
    assert _rate(policy, "undecided") == (1, 10)
    assert _rate(policy, "not_evaluated") == (1, 10)
    # Wilson 95% of 1/5 and 2/5 (the formula in report.stats; 1/5: centre 0.3303)
    assert policy["false_pass"]["low"] == pytest.approx(0.0362, abs=5e-5)
    assert policy["false_pass"]["high"] == pytest.approx(0.6245, abs=5e-5)
    assert policy["false_fail"]["low"] == pytest.approx(0.1176, abs=5e-5)
    assert policy["false_fail"]["high"] == pytest.approx(0.7693, abs=5e-5)
    task = figures[("task_success", "all")]
    assert task["runs"] == 9
    assert _rate(task, "false_pass") == (0, 4)
    assert task["false_pass"]["high"] == pytest.approx(3.8415 / 7.8415, abs=5e-5)
    assert _rate(task, "false_fail") == (1, 5)
    assert _rate(task, "agreement") == (6, 9)
    listed = {(d["run"], d["label"], d["judged"]) for d in policy["disagreements"]}
    assert listed == {
        ("r2", "pass", "fail"),
        ("r4", "fail", "pass"),
        ("r5", "fail", "undecided"),
        ("r6", "pass", "not_evaluated"),
        ("r10", "pass", "fail"),
    }
    r2 = next(d for d in policy["disagreements"] if d["run"] == "r2")
    assert r2["trace_id"] == f"{2:032x}"
    assert r2["primary"] == f"fail F-TRACEJUDGE.CASE (tracejudge.case) span {'ab' * 8}"


def test_axes_read_rules_or_cases_by_hand(tmp_path: Path) -> None:
    """``--axis policy=rules --axis task_success=cases``: each axis reads its findings only.

    policy reads every rule but tracejudge.case: r2 (only a case finding) now passes, so
    labelled pass: r2 pass, r3 pass, r6 not_evaluated, r9 pass, r10 fail -> false fail 1/5;
    labelled fail unchanged (r8 has a rule finding too) -> false pass 1/5; agreement
    (3 + 3) = 6/10.

    task_success reads tracejudge.case only: labelled fail r1 pass (its finding is a rule's),
    r2 fail, r6 not_evaluated, r8 fail -> false pass 1/4; labelled pass r3, r4, r5 (its
    undecided finding is a rule's), r9, r10 (a rule's finding) all pass -> false fail 0/5;
    agreement (2 + 5) = 7/9.
    """
    verdicts, labels = write_set(tmp_path)
    result = _run(
        "--labels",
        labels,
        "--verdicts",
        verdicts,
        "--axis",
        "policy=rules",
        "--axis",
        "task_success=cases",
        "--json",
    )
    assert result.exit_code == 0, result.output
    figures = _figures(result)
    policy, task = figures[("policy", "all")], figures[("task_success", "all")]
    assert policy["read_from"] == "the rules (not the cases)"
    assert (_rate(policy, "false_pass"), _rate(policy, "false_fail")) == ((1, 5), (1, 5))
    assert _rate(policy, "agreement") == (6, 10)
    assert task["read_from"] == "the cases"
    assert (_rate(task, "false_pass"), _rate(task, "false_fail")) == ((1, 4), (0, 5))
    assert _rate(task, "agreement") == (7, 9)
    # a rule-id pattern: only confirm-* findings -> r1, r8 (no-refund-twice) pass on policy
    result = _run(
        "--labels", labels, "--verdicts", verdicts, "--axis", "policy=confirm-*", "--json"
    )
    policy = _figures(result)[("policy", "all")]
    assert policy["confusion"]["fail"] == {"pass": 3, "fail": 1, "undecided": 1, "not_evaluated": 0}


def test_slices_by_hand(tmp_path: Path) -> None:
    """``--slice team`` on the policy axis (whole verdict).

    team a (r1-r4): labelled fail r1 fail, r4 pass -> false pass 1/2; labelled pass r2 fail,
    r3 pass -> false fail 1/2; agreement 2/4.
    team b (r5-r10): labelled fail r5 undecided, r7 fail, r8 fail -> false pass 0/3; labelled
    pass r6 not_evaluated, r9 pass, r10 fail -> false fail 1/3; agreement 3/6.
    """
    verdicts, labels = write_set(tmp_path)
    result = _run("--labels", labels, "--verdicts", verdicts, "--slice", "team", "--json")
    figures = _figures(result)
    a, b = figures[("policy", "team=a")], figures[("policy", "team=b")]
    assert (_rate(a, "false_pass"), _rate(a, "false_fail"), _rate(a, "agreement")) == (
        (1, 2),
        (1, 2),
        (2, 4),
    )
    assert (_rate(b, "false_pass"), _rate(b, "false_fail"), _rate(b, "agreement")) == (
        (0, 3),
        (1, 3),
        (3, 6),
    )


def test_text_report_shows_intervals_confusion_and_disagreements(tmp_path: Path) -> None:
    verdicts, labels = write_set(tmp_path)
    result = _run("--labels", labels, "--verdicts", verdicts, "--disagreements", "2")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        f"10 labelled runs ({labels}) judged by verdicts in {verdicts}; "
        "11 runs judged, 1 of them unlabelled"
    )
    assert lines[1] == "judge version: rules (none stamped)"
    assert lines[3:6] == [
        "axis          slice  runs  false pass              false fail               "
        "agreement                 undecided",
        "policy        all    10    1/5 20.0% [3.6%-62.4%]  2/5 40.0% [11.8%-76.9%]  "
        "5/10 50.0% [23.7%-76.3%]  1",
        "task_success  all    9     0/4 0.0% [0.0%-49.0%]   1/5 20.0% [3.6%-62.4%]   "
        "6/9 66.7% [35.4%-87.9%]   1",
    ]
    assert "disagreements on policy (5, read from the whole verdict):" in lines
    assert "  ... and 3 more (--disagreements all)" in lines
    assert (
        "  policy: labelled pass, judged fail: run r2; trace "
        f"{2:032x}; fail F-TRACEJUDGE.CASE (tracejudge.case) span {'ab' * 8}"
    ) in lines
    result = _run("--labels", labels, "--verdicts", verdicts, "--disagreements", "0")
    assert result.output.splitlines()[-1] == (
        "disagreements on task_success (3, read from the whole verdict): listed with "
        "--disagreements N|all"
    )
