"""``--cases`` end to end: real OTLP trace files judged against a cases file, the
``tracejudge cases`` commands, and the collector's configuration of the same file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.cli.cli_traces import RunSpec, record_runs, write_json
from tracejudge.cli import main
from tracejudge.collector.config import ConfigError, build_config
from tracejudge.collector.processors.judge import load_judge

RULES = """\
version: 1
tools:
  issue_refund: {kind: mutate}
rules:
  - {id: no-loops, layer: trajectory, check: {type: no_loop}}
"""
CASES = """\
version: 1
cases:
  - id: refund-ok
    expected_actions:
      - {tool: issue_refund, arguments: {order_id: "42"}}
    must_communicate: [refund]
  - id: refund-wrong
    expected_actions:
      - {tool: issue_refund, arguments: {order_id: "43"}}
"""


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Rules, cases and one trace file with four runs of three cases."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASES)
    runs = [
        RunSpec("refund-ok", "A", "ok"),
        RunSpec("refund-wrong", "A", "ok"),
        RunSpec("refund-unknown", "A", "ok"),
        RunSpec("refund-ok", "B", "error"),
    ]
    traces = write_json(tmp_path / "traces.json", record_runs(runs, 7))
    return rules, cases, traces


def test_eval_judges_each_run_against_its_case(files: tuple[Path, Path, Path]) -> None:
    rules, cases, traces = files
    result = _run("eval", "--rules", rules, "--cases", cases, "--format", "json", traces)
    assert result.exit_code == 1, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    by = {(v["case_id"], v["variant"]): v for v in lines}
    assert by["refund-ok", "A"]["verdict"] == "pass"
    wrong = by["refund-wrong", "A"]
    assert wrong["verdict"] == "fail"
    assert wrong["primary"]["code"] == "F-CASE-WRONG_ARGUMENTS"
    assert wrong["findings"][0]["rule"] == "tracejudge.case"
    assert "order_id='42', expected '43'" in wrong["primary"]["explanation"]
    unknown = by["refund-unknown", "A"]
    assert unknown["verdict"] == "warn"  # never a silent pass
    assert unknown["primary"]["code"] == "F-EVIDENCE-NO_CASE"
    failed = by["refund-ok", "B"]
    assert failed["verdict"] == "fail"
    assert failed["primary"]["code"] == "F-CASE-MISSING_ACTION"
    assert failed["primary"]["span_id"] == failed["root_span_id"]


def test_a_cases_file_that_matches_no_run_says_so(
    files: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """A cases file none of whose cases is a run's case judged nothing: exit 2, naming the
    case ids the runs do have; when only some runs lack a case, a note counts them."""
    rules, cases, traces = files
    other = tmp_path / "other.yaml"
    other.write_text("version: 1\ncases:\n  - id: elsewhere\n    must_communicate: [hi]\n")
    result = _run("eval", "--rules", rules, "--cases", other, traces)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"tracejudge eval: {other}: none of its 1 case(s) matches a run; the runs' case ids "
        "(tracejudge.case.id) are: refund-ok, refund-unknown, refund-wrong"
    )
    partial = _run("eval", "--rules", rules, "--cases", cases, traces)
    assert partial.exit_code == 1
    assert (
        f"tracejudge eval: note: 1 of 4 runs have no case in {cases} (case ids: refund-unknown)"
    ) in partial.stderr.splitlines()


def test_the_cited_span_is_the_tool_call(files: tuple[Path, Path, Path]) -> None:
    rules, cases, traces = files
    result = _run("eval", "--rules", rules, "--cases", cases, "--format", "json", traces)
    wrong = next(
        v for v in map(json.loads, result.stdout.splitlines()) if v["case_id"] == "refund-wrong"
    )
    doc = json.loads(traces.read_text())
    names = {
        s["spanId"]: s["name"]
        for rs in doc["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    }
    assert names[wrong["primary"]["span_id"]] == "execute_tool issue_refund"


def test_without_cases_the_same_runs_pass(files: tuple[Path, Path, Path]) -> None:
    rules, _, traces = files
    assert _run("eval", "--rules", rules, traces).exit_code == 0


def test_a_bad_cases_file_exits_two_naming_file_line_and_case(
    files: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    rules, _, traces = files
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: 1\ncases:\n  - id: x\n    expected_actions: [{tool: t, match: fuzzy}]\n"
    )
    result = _run("eval", "--rules", rules, "--cases", bad, traces)
    assert result.exit_code == 2
    assert (
        f"tracejudge eval: {bad}: line 3: case 'x' expected_actions[0].match: "
        "'fuzzy' is not one of exact, subset"
    ) in result.stderr


def test_tools_the_rules_do_not_declare_are_warned_about(
    files: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    rules, _, traces = files
    typo = tmp_path / "typo.jsonl"
    typo.write_text(json.dumps({"id": "refund-ok", "forbidden_actions": [{"tool": "issue_refnd"}]}))
    result = _run("eval", "--rules", rules, "--cases", typo, traces)
    assert "'issue_refnd' is not declared in the rules' tools (did you mean 'issue_refund'?)" in (
        result.stderr
    )


def test_cases_check(files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    rules, cases, _ = files
    ok = _run("cases", "check", "--rules", rules, cases)
    assert ok.exit_code == 0
    assert "1 cases file(s) valid, 2 case(s)" in ok.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\n{oops\n')
    result = _run("cases", "check", bad)
    assert result.exit_code == 1
    assert f"{bad}: line 1: case 'a': no expectations" in result.stderr
    assert f"{bad}: line 2: not JSON" in result.stderr


def test_from_tau_bench_writes_a_cases_file(tmp_path: Path) -> None:
    task = {
        "user_id": "u1",
        "instruction": "Cancel ABC123.",
        "actions": [
            {"name": "get_reservation_details", "kwargs": {"reservation_id": "ABC123"}},
            {"name": "cancel_reservation", "kwargs": {"reservation_id": "ABC123"}},
        ],
        "outputs": [],
    }
    records = tmp_path / "results.json"
    records.write_text(
        json.dumps([{"task_id": 3, "trial": t, "info": {"task": task}} for t in (0, 1)])
    )
    out = tmp_path / "tau.jsonl"
    result = _run("cases", "from-tau-bench", "--prefix", "tau-x-", "--output", out, records)
    assert result.exit_code == 0, result.output
    assert "1 case(s) written" in result.stderr
    [case] = [json.loads(line) for line in out.read_text().splitlines()]
    assert case["id"] == "tau-x-3"
    assert case["expected_actions"] == [
        {"tool": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}}
    ]
    assert _run("cases", "check", out).exit_code == 0
    broken = tmp_path / "broken.json"
    broken.write_text('{"not": "a list"}')
    assert _run("cases", "from-tau-bench", broken).exit_code == 2


class TestCollectorConfiguration:
    """``tracejudge serve --cases`` / ``cases:``: checked at start, handed to the engine."""

    def test_config_key_and_flag(self, files: tuple[Path, Path, Path]) -> None:
        rules, cases, _ = files
        forward = {"forward": ["http://127.0.0.1:4318"]}
        assert (
            build_config({**forward, "rules": str(rules), "cases": str(cases)}, {}).cases == cases
        )
        assert build_config(forward, {"rules": rules, "cases": cases}).cases == cases
        with pytest.raises(ConfigError, match=r"cases: .* is not a file"):
            build_config({**forward, "cases": str(cases.parent)}, {})

    def test_the_collector_engine_judges_against_the_cases(
        self, files: tuple[Path, Path, Path]
    ) -> None:
        from tracejudge.model import load_traces

        rules, cases, traces = files
        judge = load_judge(rules, None, cases)
        verdicts = [v for spans in load_traces([traces]).values() for v in judge.judge_spans(spans)]
        assert sorted(str(v.primary.code) if v.primary else "-" for v in verdicts) == [
            "-",
            "F-CASE-MISSING_ACTION",
            "F-CASE-WRONG_ARGUMENTS",
            "F-EVIDENCE-NO_CASE",
        ]

    def test_serve_refuses_a_bad_cases_file_at_start(
        self, files: tuple[Path, Path, Path], tmp_path: Path
    ) -> None:
        rules, _, _ = files
        bad = tmp_path / "bad.yaml"
        bad.write_text("version: 1\ncases: [{id: x}]\n")
        common = ["serve", "--rules", rules, "--forward", "http://127.0.0.1:4318"]
        result = CliRunner().invoke(main, [*map(str, common), "--cases", str(bad)])
        assert result.exit_code == 2
        assert "case 'x': no expectations" in result.output
        missing = CliRunner().invoke(main, [*map(str, common), "--cases", str(tmp_path / "no")])
        assert missing.exit_code == 2
        assert "is not a file" in missing.output
