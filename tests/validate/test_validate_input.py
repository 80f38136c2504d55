"""Bad input to ``tracejudge validate``: exit 2 and a message naming the file and line;
every bad line reported, nothing silently dropped."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from tests.validate.validate_support import write_set
from tracejudge.cli import main


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["validate", *(str(a) for a in args)], catch_exceptions=False)


def _labels(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_labels_naming_runs_that_are_not_there(tmp_path: Path) -> None:
    verdicts, _ = write_set(tmp_path)
    labels = _labels(
        tmp_path / "bad.jsonl",
        [
            '{"run": "r1", "labels": {"policy": "fail"}}',
            '{"run": "r99", "labels": {"policy": "fail"}}',
            '{"run": "r2", "case": "other", "labels": {"policy": "pass"}}',
        ],
    )
    result = _run("--labels", labels, "--verdicts", verdicts)
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        f"tracejudge validate: {labels}:2: run 'r99' is not among the 11 judged runs",
        f"tracejudge validate: {labels}:3: run 'r2' is labelled case 'other' but the run's "
        "case is 'refund'",
    ]


def test_labels_outside_the_axis_values_and_malformed_lines(tmp_path: Path) -> None:
    verdicts, _ = write_set(tmp_path)
    labels = _labels(
        tmp_path / "bad.jsonl",
        [
            '{"run": "r1", "labels": {"policy": "maybe", "task_success": "pass"}}',
            "",
            "{not json",
            '{"run": "r1", "labels": {"policy": "fail"}}',
            '{"run": "r3", "labels": {"policy": "fail"}}',
            '{"run": "r3", "labels": {"policy": 1}, "tags": {"team": 7}, "policy": "fail"}',
            '["r4"]',
            '{"labels": {}}',
        ],
    )
    result = _run("--labels", labels, "--verdicts", verdicts)
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        f"tracejudge validate: {labels}:1: labels.policy: 'maybe' is not one of the axis's "
        "values ('pass', 'fail', or null for not labelled)",
        f"tracejudge validate: {labels}:3: not JSON: Expecting property name enclosed in "
        "double quotes (column 2)",
        f"tracejudge validate: {labels}:6: unknown key(s) 'policy' (known: case, labels, name, "
        "note, run, tags; axes go under 'labels', slice tags under 'tags')",
        f"tracejudge validate: {labels}:6: labels.policy: 1 is not one of the axis's values "
        "('pass', 'fail', or null for not labelled)",
        f"tracejudge validate: {labels}:6: tags.team: must be a string, not 7",
        f"tracejudge validate: {labels}:7: a labelled run is a JSON object, not list",
        f"tracejudge validate: {labels}:8: 'run' must be a non-empty string (the run id or "
        "trace id)",
    ]


def test_a_labels_file_labelled_twice_or_empty(tmp_path: Path) -> None:
    verdicts, _ = write_set(tmp_path)
    twice = _labels(
        tmp_path / "twice.jsonl",
        ['{"run": "r1", "labels": {"policy": "fail"}}'] * 2,
    )
    result = _run("--labels", twice, "--verdicts", verdicts)
    assert result.exit_code == 2
    assert f"{twice}:2: run 'r1' is labelled twice (first on line 1)" in result.output
    empty = _labels(tmp_path / "empty.jsonl", [""])
    result = _run("--labels", empty, "--verdicts", verdicts)
    assert result.exit_code == 2
    assert f"{empty}: no labelled runs" in result.output
    unlabelled = _labels(tmp_path / "null.jsonl", ['{"run": "r1", "labels": {"policy": null}}'])
    result = _run("--labels", unlabelled, "--verdicts", verdicts)
    assert result.exit_code == 2
    assert f"{unlabelled}: no run is labelled on any axis" in result.output
    missing = tmp_path / "missing.jsonl"
    result = _run("--labels", missing, "--verdicts", verdicts)
    assert result.exit_code == 2
    assert f"{missing}: cannot read labels:" in result.output


def test_bad_verdicts_axis_and_slice_options(tmp_path: Path) -> None:
    verdicts, labels = write_set(tmp_path)
    bad = tmp_path / "bad-verdicts.jsonl"
    bad.write_text(
        verdicts.read_text()
        + json.dumps({"trace_id": "ab", "verdict": "maybe"})
        + "\n"
        + json.dumps({"record": "shadow", "request_id": "q1", "outcome": "same"})
        + "\n"
        + json.dumps({"trace_id": "cd", "run_id": "r12"})
        + "\n",
        encoding="utf-8",
    )
    result = _run("--labels", labels, "--verdicts", bad)
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"tracejudge validate: {bad}:{n}: a verdict needs 'trace_id' and 'verdict' "
        "(pass|warn|fail|error)"
        for n in (12, 14)  # line 13, a shadow pairing line, is not a verdict
    ]
    result = _run("--labels", labels, "--verdicts", verdicts, "--axis", "safety=rules")
    assert result.exit_code == 2
    assert "--axis 'safety=rules': AXIS=READ with an axis of the labels (policy, task_success)" in (
        result.output
    )
    result = _run("--labels", labels, "--verdicts", verdicts, "--axis", "policy=,")
    assert result.exit_code == 2
    assert "--axis 'policy=,': an axis reading is all, rules, cases or rule-id patterns" in (
        result.output
    )
    result = _run("--labels", labels, "--verdicts", verdicts, "--slice", "squad")
    assert result.exit_code == 2
    assert "--slice 'squad': no labelled run has that tag" in result.output
    result = _run("--labels", labels, "--verdicts", verdicts, "--rules", "rules.yaml")
    assert result.exit_code == 2
    assert "--verdicts replaces FILES, --rules and --cases" in result.output
