"""``eval`` on a reply that says yes and no: the undecided finding is listed, counted,
marked in the JSON, and ``--strict`` makes it fail the run."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from tracejudge.cli import main

RULES = """\
version: 1
tools:
  cancel_reservation: {kind: mutate}
rules:
  - id: confirm-before-cancelling
    layer: policy
    check: {type: user_confirmation, tools: [cancel_reservation]}
"""
REPLY = "Yes, go ahead. Actually, no."


def _transcript(path: Path) -> Path:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "cancel_reservation", "arguments": '{"reservation_id": "R1"}'},
    }
    messages = [
        {"role": "user", "content": "Cancel R1."},
        {"role": "assistant", "content": "Cancel reservation R1?"},
        {"role": "user", "content": REPLY},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "cancelled"}'},
        {"role": "assistant", "content": "Done."},
    ]
    path.write_text(json.dumps({"messages": messages, "case_id": "cancel-r1"}))
    return path


def _eval(tmp_path: Path, *extra: str) -> Result:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    trace = _transcript(tmp_path / "t.json")
    args = ["eval", "--rules", str(rules), *extra, str(trace)]
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_eval_lists_and_counts_undecided_findings(tmp_path: Path) -> None:
    """A warning, never a silent pass: the table lists the finding with the reply cited and
    the count line counts it; the JSON marks it."""
    result = _eval(tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    undecided = [line for line in lines if line.startswith("undecided ")]
    assert len(undecided) == 1
    assert "F-UNDECIDED-CONFIRMATION [confirm-before-cancelling]" in undecided[0]
    assert REPLY in undecided[0]
    assert lines[-1] == "1 run(s): 1 warn; 1 undecided finding(s) in 1 run(s)"
    data = json.loads(_eval(tmp_path, "--format", "json").stdout)
    assert data["verdict"] == "warn"
    assert data["undecided"] == 1
    assert data["findings"][0]["undecided"] is True


def test_eval_strict_fails_undecided_findings(tmp_path: Path) -> None:
    """``--strict``: the rule's severity (fail), so the run fails and eval exits 1."""
    result = _eval(tmp_path, "--strict")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[-1] == "1 run(s): 1 fail; 1 undecided finding(s) in 1 run(s)"


def test_serve_strict_reaches_the_engine(tmp_path: Path) -> None:
    """``strict: true`` in serve's config (``--strict``) judges as ``eval --strict``."""
    from tracejudge.collector.config import build_config
    from tracejudge.collector.processors.judge import load_judge
    from tracejudge.engine import Engine
    from tracejudge.report.loading import load_runs

    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    (run,) = load_runs([_transcript(tmp_path / "t.json")]).runs
    verdicts = {}
    for strict in (False, True):
        config = build_config({"rules": str(rules), "strict": strict}, {})
        assert config.strict is strict
        judge = load_judge(rules, strict=config.strict)
        assert isinstance(judge, Engine)
        verdicts[strict] = judge.judge(run).verdict
    assert verdicts == {False: "warn", True: "fail"}
