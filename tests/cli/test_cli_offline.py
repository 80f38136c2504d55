"""The offline commands end to end: real OTLP files in, exit codes and outputs checked.

Trace files are recorded with the real OpenTelemetry SDK and encoded with the real OTLP
encoder (``cli_traces``); the commands run through click's CliRunner in-process.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.cli.cli_traces import RULES_YAML, RunSpec, record_runs, write_json, write_jsonl, write_pb
from tests.support.guards import PROCESS_S
from tracejudge.cli import main

HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    """A valid rules file: refund cases must call issue_refund successfully."""
    path = tmp_path / "rules.yaml"
    path.write_text(RULES_YAML, encoding="utf-8")
    return path


@pytest.fixture
def mixed(tmp_path: Path) -> tuple[Path, Path]:
    """Two files in two encodings: a good run (JSON) and two bad ones (gzipped protobuf)."""
    good = write_json(tmp_path / "good.json", record_runs([RunSpec("refund-ok", "A", "ok")], 1))
    bad = write_pb(
        tmp_path / "bad.pb.gz",
        record_runs([RunSpec("refund-ok", "B", "skipped"), RunSpec("refund-ok", "B", "error")], 2),
        gz=True,
    )
    return good, bad


def _json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class TestEval:
    """``tracejudge eval``: the CI gate."""

    def test_all_passing_runs_exit_zero(self, rules: Path, mixed: tuple[Path, Path]) -> None:
        """A suite with only passing runs must not break the build."""
        result = _run("eval", "--rules", rules, mixed[0])
        assert result.exit_code == 0, result.output
        assert "refund-ok" in result.stdout
        assert "1 run(s): 1 pass" in result.stdout

    def test_a_failing_run_exits_one_and_names_its_rule_and_span(
        self, rules: Path, mixed: tuple[Path, Path]
    ) -> None:
        """The agent said "refund on its way" without a successful refund: exit 1, shown why,
        by which rule; --wide adds the trace and span ids."""
        result = _run("eval", "--rules", rules, *mixed)
        assert result.exit_code == 1, result.output
        rows = [re.split(r"\s{2,}", line) for line in result.stdout.splitlines()[2:-1]]
        assert [row[:4] for row in rows] == [
            ["refund-ok/A", "pass", "-", "-"],
            ["refund-ok/B …00020001", "fail", "refund-issued", "F-ACTION-MISSING_STEP"],
            ["refund-ok/B …00020002", "fail", "refund-issued", "F-ACTION-MISSING_STEP"],
        ]
        assert "3 run(s): 1 pass, 2 fail" in result.stdout
        wide = _run("eval", "--rules", rules, "--wide", *mixed)
        rows = [re.split(r"\s{2,}", line) for line in wide.stdout.splitlines()[2:-1]]
        assert [row[1:3] for row in rows] == [["refund-agent", "pass"]] + [
            ["refund-agent", "fail"]
        ] * 2
        assert all(HEX32.match(row[5]) for row in rows)
        assert all(HEX16.match(row[6]) for row in rows[1:])

    def test_ci_formats_failures_only_and_quiet(
        self, rules: Path, mixed: tuple[Path, Path]
    ) -> None:
        """JUnit XML lists every run (failures as <failure>); markdown is a table; with
        --failures-only only the runs that did not pass are printed; --quiet prints the
        count alone."""
        import xml.etree.ElementTree as ET

        junit = _run("eval", "--rules", rules, "--format", "junit", *mixed)
        assert junit.exit_code == 1
        root = ET.fromstring(junit.stdout)
        assert (root.tag, root.get("tests"), root.get("failures"), root.get("errors")) == (
            "testsuites",
            "3",
            "2",
            "0",
        )
        [suite] = root
        cases = [(c.get("classname"), c.get("name"), [e.tag for e in c]) for c in suite]
        assert cases == [
            ("refund-agent", "refund-ok/A", []),
            ("refund-agent", "refund-ok/B …00020001", ["failure"]),
            ("refund-agent", "refund-ok/B …00020002", ["failure"]),
        ]
        failure = suite[1][0]
        assert failure.get("type") == "F-ACTION-MISSING_STEP"
        assert failure.text is not None
        assert "(rule refund-issued, layer outcome)" in failure.text
        md = _run("eval", "--rules", rules, "--format", "markdown", "--failures-only", *mixed)
        lines = md.stdout.splitlines()
        assert lines[:2] == [
            "| run | verdict | rule | code | explanation |",
            "|---|---|---|---|---|",
        ]
        assert [line.split(" | ")[1] for line in lines[2:4]] == ["fail", "fail"]
        assert lines[4:] == ["", "**3 run(s): 1 pass, 2 fail**"]
        only = _run("eval", "--rules", rules, "--failures-only", *mixed)
        rows = [re.split(r"\s{2,}", line) for line in only.stdout.splitlines()[2:-1]]
        assert [row[1] for row in rows] == ["fail", "fail"]
        passing = _run("eval", "--rules", rules, "--failures-only", mixed[0])
        assert passing.stdout.splitlines() == ["no run failed", "1 run(s): 1 pass"]
        quiet = _run("eval", "--rules", rules, "-q", *mixed)
        assert (quiet.exit_code, quiet.stdout) == (1, "3 run(s): 1 pass, 2 fail\n")
        refused = _run("eval", "--rules", rules, "-q", "--format", "json", *mixed)
        assert refused.exit_code == 2
        assert "--quiet goes with --format table" in refused.stderr

    def test_json_lines_follow_the_public_verdict_shape(
        self, rules: Path, mixed: tuple[Path, Path]
    ) -> None:
        """One object per run with lowercase hex ids; tools downstream parse this."""
        result = _run("eval", "--rules", rules, "--format", "json", *mixed)
        assert result.exit_code == 1
        lines = _json_lines(result.stdout)
        assert len(lines) == 3
        for line in lines:
            assert {
                "trace_id",
                "root_span_id",
                "agent",
                "case_id",
                "variant",
                "verdict",
                "layers",
                "primary",
                "findings",
            } <= set(line)
            assert HEX32.match(str(line["trace_id"]))
            assert HEX16.match(str(line["root_span_id"]))
        failing = [line for line in lines if line["verdict"] == "fail"]
        assert len(failing) == 2
        for line in failing:
            primary = line["primary"]
            assert isinstance(primary, dict)
            assert HEX16.match(str(primary["span_id"]))
            assert primary["explanation"]
            findings = line["findings"]
            assert isinstance(findings, list)
            assert {"code", "severity", "span_ids", "explanation"} <= set(findings[0])

    def test_collector_json_lines_and_gzip_are_read(self, rules: Path, tmp_path: Path) -> None:
        """The Collector's file exporter writes one OTLP request per line."""
        path = write_jsonl(
            tmp_path / "export.json",
            [record_runs([RunSpec("c", "A", "ok")], 5), record_runs([RunSpec("c", "A", "ok")], 6)],
        )
        gz = write_json(
            tmp_path / "more.json.gz", record_runs([RunSpec("c", "A", "ok")], 7), gz=True
        )
        result = _run("eval", "--rules", rules, "--format", "json", path, gz)
        assert result.exit_code == 0, result.output
        assert len(_json_lines(result.stdout)) == 3

    def test_malformed_file_is_named_and_the_others_still_judged(
        self, rules: Path, mixed: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """One broken export must not hide the verdicts of the rest; exit 2 flags the input."""
        broken = tmp_path / "broken.json"
        broken.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}')
        missing = tmp_path / "missing.json"
        result = _run("eval", "--rules", rules, "--format", "json", mixed[0], broken, missing)
        assert result.exit_code == 2
        assert "broken.json" in result.stderr
        assert "missing.json" in result.stderr
        assert len(_json_lines(result.stdout)) == 1

    def test_a_bad_line_is_reported_and_the_other_lines_judged(
        self, rules: Path, tmp_path: Path
    ) -> None:
        """One bad line of a JSON-lines export: the good lines are judged and printed, the bad
        one named with its line, exit 2 at the end (it used to reject the whole file)."""
        path = write_jsonl(
            tmp_path / "export.jsonl",
            [record_runs([RunSpec("c", "A", "ok")], 5), record_runs([RunSpec("c", "B", "ok")], 6)],
        )
        first, second = path.read_text().splitlines()
        path.write_text(f"{first}\n{{not json\n{second}\n")
        result = _run("eval", "--rules", rules, "--format", "json", path)
        assert result.exit_code == 2
        assert [line["variant"] for line in _json_lines(result.stdout)] == ["A", "B"]
        assert result.stderr.splitlines()[1:] == [
            f"tracejudge eval: skipped {path}: line 2: invalid JSON at column 2: "
            "Expecting property name enclosed in double quotes"
        ]

    def test_empty_input_is_an_error_not_a_pass(self, rules: Path, tmp_path: Path) -> None:
        """Judging nothing must never look like a green build."""
        empty = tmp_path / "empty.json"
        empty.write_text('{"resourceSpans": []}')
        result = _run("eval", "--rules", rules, empty)
        assert result.exit_code == 2
        assert "empty.json" in result.stderr

    def test_bad_rules_print_every_error_with_its_path(
        self, tmp_path: Path, mixed: tuple[Path, Path]
    ) -> None:
        """Rule authors see all problems at once, each located, and nothing is judged."""
        bad = tmp_path / "bad.yaml"
        bad.write_text(
            "version: 1\nrules:\n"
            "  - {id: a, layer: nowhere, check: {type: required_steps, tools: [x]}}\n"
            "  - {id: b, layer: outcome, check: {type: no_such_check}}\n"
        )
        result = _run("eval", "--rules", bad, mixed[0])
        assert result.exit_code == 2
        errors = [line for line in result.stderr.splitlines() if "bad.yaml" in line]
        assert len(errors) >= 2
        assert result.stdout == ""

    def test_usage_error_exits_two(self, mixed: tuple[Path, Path]) -> None:
        """A missing --rules is a usage error, not a failed run."""
        assert _run("eval", mixed[0]).exit_code == 2


class TestRulesCheck:
    """``tracejudge rules check``."""

    def test_valid_file_prints_one_line_summary(self, rules: Path) -> None:
        """A valid file: exit 0 and a single summary line."""
        result = _run("rules", "check", rules)
        assert result.exit_code == 0, result.output
        assert result.stdout.strip().splitlines() == ["1 rules file(s) valid, 1 rule(s)"]

    def test_invalid_file_lists_errors_and_exits_one(self, rules: Path, tmp_path: Path) -> None:
        """Errors from every file, each prefixed with its file, exit 1."""
        bad = tmp_path / "bad.yaml"
        bad.write_text("version: 2\nrules: nope\n")
        result = _run("rules", "check", rules, bad, tmp_path / "absent.yaml")
        assert result.exit_code == 1
        assert "absent.yaml" in result.stderr
        assert sum("bad.yaml" in line for line in result.stderr.splitlines()) >= 1


class TestBaselineRecord:
    """``tracejudge baseline record``."""

    def test_records_the_chosen_run_and_prints_its_path(
        self, tmp_path: Path, mixed: tuple[Path, Path]
    ) -> None:
        """The stored file is the reviewed run's tool sequence under the case given."""
        out = tmp_path / "baselines"
        result = _run("baseline", "record", "--case", "refund-ok", "--out", out, mixed[0])
        assert result.exit_code == 0, result.output
        stored = out / "refund-ok.json"
        assert str(stored) in result.stdout
        doc = json.loads(stored.read_text())
        assert [c["tool"] for c in doc["calls"]] == ["issue_refund"]

    def test_the_documented_command_records_the_runs_case(self, tmp_path: Path) -> None:
        """docs/baselines-and-canary.md's command, on the refund example's healthy run: the
        baseline is stored under the case that run carries, silently; another case warns
        which runs it will be compared with (the page used to record `dup-charge-7`, a case
        no run has)."""
        healthy = Path(__file__).resolve().parents[2] / "examples/refund/traces/healthy.json"
        out = tmp_path / "baselines"
        case = "refund-duplicate-charge"
        result = _run("baseline", "record", "--case", case, "--out", out, healthy)
        assert result.exit_code == 0, result.output
        assert (out / f"{case}.json").exists()
        assert result.stderr == "review it and commit it with your rules\n"
        other = _run("baseline", "record", "--case", "dup-charge-7", "--out", out, healthy)
        assert other.exit_code == 0
        assert other.stderr.splitlines()[0] == (
            f"tracejudge baseline record: warning: the run carries case '{case}'; recorded as "
            "case 'dup-charge-7', the baseline is compared only with runs of case "
            f"'dup-charge-7' (--case {case} matches this run)"
        )

    def test_several_runs_need_a_trace_id(self, tmp_path: Path, mixed: tuple[Path, Path]) -> None:
        """Never guess which run is golden: list the candidates, exit 2; --trace-id picks."""
        out = tmp_path / "baselines"
        result = _run("baseline", "record", "--case", "x", "--out", out, mixed[1])
        assert result.exit_code == 2
        ids = re.findall(r"[0-9a-f]{32}", result.stderr)
        assert len(ids) == 2
        chosen = _run(
            "baseline",
            "record",
            "--case",
            "x",
            "--out",
            out,
            "--trace-id",
            ids[1].upper(),
            mixed[1],
        )
        assert chosen.exit_code == 0, chosen.output
        assert (out / "x.json").exists()

    def test_unknown_trace_id_is_an_error(self, tmp_path: Path, mixed: tuple[Path, Path]) -> None:
        """A typo in --trace-id must not record something else."""
        result = _run(
            "baseline",
            "record",
            "--case",
            "x",
            "--out",
            tmp_path,
            "--trace-id",
            "ab" * 16,
            mixed[0],
        )
        assert result.exit_code == 2
        assert "ab" * 16 in result.stderr


def test_recorded_baseline_judges_later_runs(tmp_path: Path, mixed: tuple[Path, Path]) -> None:
    """Record a golden run, then a run that skips its refund fails the baseline diff."""
    out = tmp_path / "baselines"
    recorded = _run("baseline", "record", "--case", "refund-ok", "--out", out, mixed[0])
    assert recorded.exit_code == 0, recorded.output
    rules = tmp_path / "baseline-rules.yaml"
    rules.write_text(
        "version: 1\nrules:\n  - {id: golden, layer: trajectory, check: {type: baseline}}\n"
    )
    result = _run("eval", "--rules", rules, "--baselines", out, "--format", "json", *mixed)
    assert result.exit_code == 1, result.output
    by_variant = {str(line["variant"]): line for line in _json_lines(result.stdout)}
    assert by_variant["A"]["verdict"] == "pass"
    findings = by_variant["B"]["findings"]
    assert isinstance(findings, list)
    codes = {f["code"] for f in findings}
    assert any("BASELINE" in str(code) for code in codes)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.rects = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.rects += tag == "rect"
        self.ids.extend(v for k, v in attrs if k == "id" and v)

    handle_startendtag = handle_starttag


class TestReport:
    """``tracejudge report`` over ``eval --output`` verdicts."""

    def _verdicts(self, rules: Path, mixed: tuple[Path, Path], tmp_path: Path) -> Path:
        out = tmp_path / "verdicts.jsonl"
        result = _run("eval", "--rules", rules, "--output", out, *mixed)
        assert result.exit_code == 1
        return out

    def test_text_report_has_rates_comparison_and_codes(
        self, rules: Path, mixed: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """Variant A (1/1) against B (0/2): Wilson rates, one paired case, codes counted."""
        verdicts = self._verdicts(rules, mixed, tmp_path)
        result = _run("report", verdicts, "--variants", "A", "B", "-k", "1", "-k", "2")
        assert result.exit_code == 0, result.output
        out = result.stdout
        assert "3 run(s), 1 passed: 33.3% [6.1%, 79.2%]" in out
        assert "A wins 1, B wins 0, ties 0" in out
        assert "1 unpaired run(s)" in out
        assert "pass^2" in out
        assert out.index("Runs that did not pass") < out.index("Failure codes by frequency")

    def test_json_report_carries_the_same_numbers(
        self, rules: Path, mixed: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """--format json: the text report's numbers as one object, rates as fractions."""
        verdicts = self._verdicts(rules, mixed, tmp_path)
        result = _run("report", verdicts, "--variants", "A", "B", "-k", "1", "--format", "json")
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert (doc["runs"], doc["passed"]) == (3, 1)
        assert [round(doc["pass_rate"][k], 3) for k in ("rate", "low", "high")] == [
            0.333,
            0.061,
            0.792,
        ]
        assert [(g["name"], g["runs"], g["passed"]) for g in doc["by_variant"]] == [
            ("A", 1, 1),
            ("B", 2, 0),
        ]
        assert doc["by_variant"][1]["pass_rate"]["rate"] == 0.0
        assert doc["repetitions"][0]["pass_at_k"] == {"1": 1.0}
        comparison = doc["comparison"]
        assert (comparison["a_wins"], comparison["b_wins"], comparison["unpaired"]) == (1, 0, 1)
        assert [(f["verdict"], f["code"], f["rule"]) for f in doc["failures"]] == [
            ("fail", "F-ACTION-MISSING_STEP", "refund-issued")
        ] * 2
        assert doc["codes"] == [
            {"code": "F-ACTION-MISSING_STEP", "severity": "fail", "runs": 2, "occurrences": 2}
        ]
        assert "shadow" not in doc

    def test_html_with_traces_draws_every_run(
        self, rules: Path, mixed: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """Given the trace files, each judged run gets a timeline row with its steps."""
        verdicts = self._verdicts(rules, mixed, tmp_path)
        page = tmp_path / "r.html"
        result = _run(
            "report", verdicts, "--html", page, "--traces", mixed[0], "--traces", mixed[1]
        )
        assert result.exit_code == 0, result.output
        tags = _Tags()
        tags.feed(page.read_text())
        assert sum(i.startswith("run-") for i in tags.ids) == 3
        assert tags.rects >= 3 * 3

    def test_eval_html_renders_directly(
        self, rules: Path, mixed: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """eval has the runs in hand: no second pass over the files needed."""
        page = tmp_path / "e.html"
        result = _run("eval", "--rules", rules, "--html", page, *mixed)
        assert result.exit_code == 1
        assert page.read_text().count('class="row" id="run-') == 3

    def test_unreadable_trace_file_still_writes_the_page(
        self, rules: Path, mixed: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """A missing --traces file is reported (exit 2) but the statistics page is written."""
        verdicts = self._verdicts(rules, mixed, tmp_path)
        page = tmp_path / "r.html"
        result = _run("report", verdicts, "--html", page, "--traces", tmp_path / "gone.json")
        assert result.exit_code == 2
        assert "gone.json" in result.stderr
        assert "3 judged run(s) have no trace here to draw" in page.read_text()

    def test_bad_verdict_lines_are_located(self, tmp_path: Path) -> None:
        """A hand-edited verdict file gets file:line errors and exit 2."""
        path = tmp_path / "v.jsonl"
        path.write_text('{"trace_id": "ab", "root_span_id": "cd", "verdict": "pass"}\nnope\n')
        result = _run("report", path)
        assert result.exit_code == 2
        assert f"{path}:2: not valid JSON" in result.stderr


def test_installed_command_runs_as_a_process(rules: Path, mixed: tuple[Path, Path]) -> None:
    """CI calls the console script, not click in-process: its exit code and streams count."""
    script = Path(sys.executable).with_name("tracejudge")
    proc = subprocess.run(
        [str(script), "eval", "--rules", str(rules), "--format", "json", *map(str, mixed)],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert [json.loads(line)["verdict"] for line in proc.stdout.splitlines()] == [
        "pass",
        "fail",
        "fail",
    ]
    assert "\x1b[" not in proc.stdout


def test_refund_example_traces(tmp_path: Path) -> None:
    """The shipped refund example: the healthy run passes, the silent failure is caught."""
    example = Path(__file__).resolve().parents[2] / "examples" / "refund"
    out = tmp_path / "v.jsonl"
    result = _run(
        "eval",
        "--rules",
        example / "rules.yaml",
        "--baselines",
        example / "baselines",
        "--output",
        out,
        example / "traces" / "healthy.json",
        example / "traces" / "silent_failure.json",
    )
    assert result.exit_code == 1, result.output
    verdicts = {str(line["variant"]): line["verdict"] for line in _json_lines(out.read_text())}
    assert verdicts == {"healthy": "pass", "silent_failure": "fail"}
    report = _run("report", out, "--variants", "healthy", "silent_failure")
    assert report.exit_code == 0, report.output
    assert "A wins 1, B wins 0" in report.stdout
