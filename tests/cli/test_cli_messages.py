"""What the offline commands print when the input is wrong: one clear line per problem.

Each test here is a message a new user met and could not act on (a stray placeholder,
thousands of lines for one wrong file); the commands run in-process through CliRunner.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result

from tests.cli.cli_traces import RULES_YAML, RunSpec, record_runs, write_json
from tests.support.guards import PROCESS_S
from tracejudge.cli import main
from tracejudge.cli.eval import MAX_ERRORS_SHOWN
from tracejudge.cli.report import spread_option

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_missing_rules_file_names_the_file_without_placeholder(tmp_path: Path) -> None:
    """``eval``, ``rules check`` and ``baseline record`` say which rules file is missing."""
    trace = write_json(tmp_path / "t.json", record_runs([RunSpec("c", "A", "ok")], 1))
    missing = tmp_path / "missing.yaml"
    expected = f"{missing}: cannot read: No such file or directory"
    for args in (
        ("eval", "--rules", missing, trace),
        ("rules", "check", missing),
        ("baseline", "record", "--rules", missing, "--out", tmp_path / "b", "--case", "c", trace),
    ):
        result = _run(*args)
        assert result.exit_code in (1, 2), result.output
        lines = result.stderr.splitlines()
        assert any(line.endswith(expected) for line in lines), (args, result.stderr)
        assert "<file>" not in result.stderr, args


def _sh_block(page: Path, needle: str) -> list[str]:
    """The commands of the ```sh block in ``page`` that contains ``needle``."""
    text = page.read_text(encoding="utf-8")
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        if needle in block:
            return [
                line for line in block.splitlines() if line.strip() and not line.startswith("#")
            ]
    raise AssertionError(f"no sh block with {needle!r} in {page}")


def test_reports_page_commands_run_as_written(tmp_path: Path) -> None:
    """docs/reports.md's two commands, run by a shell exactly as printed: the glob after
    ``--traces`` expands to several files and every one of them is drawn (it used to read
    all but the first as verdict files: thousands of errors, exit 2, no page)."""
    (tmp_path / "rules.yaml").write_text(RULES_YAML, encoding="utf-8")
    traces = tmp_path / "traces"
    traces.mkdir()
    for n, (variant, refund) in enumerate(
        [("stable", "ok"), ("stable", "ok"), ("candidate", "ok"), ("candidate", "error")]
    ):
        spec = RunSpec("refund-ok", variant, refund)  # type: ignore[arg-type]
        # pretty-printed, as exporters and people write them: many lines per file
        path = traces / f"run{n}.json"
        write_json(path, record_runs([spec], n + 1))
        path.write_text(json.dumps(json.loads(path.read_text()), indent=2), encoding="utf-8")
    commands = _sh_block(ROOT / "docs" / "reports.md", "--traces traces/*.json")
    assert len(commands) == 2
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    done = [
        subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=PROCESS_S,
            check=False,
        )
        for command in commands
    ]
    assert done[0].returncode == 1, done[0].stderr  # one candidate run failed
    assert done[1].returncode == 0, done[1].stderr
    assert done[1].stderr.strip() == "HTML report written to report.html"
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.count('class="row" id="run-') == 4
    assert "have no trace here to draw" not in page


def test_traces_takes_several_files_and_stays_repeatable() -> None:
    """``--traces a b`` and ``--traces a --traces b`` mean the same; ``--`` ends it."""
    assert spread_option(["v.jsonl", "--traces", "a", "b", "--html", "p"], "--traces") == [
        "v.jsonl",
        "--traces",
        "a",
        "--traces",
        "b",
        "--html",
        "p",
    ]
    assert spread_option(["--traces", "a", "--traces", "b"], "--traces") == [
        "--traces",
        "a",
        "--traces",
        "b",
    ]
    assert spread_option(["--traces", "a", "--", "b"], "--traces") == ["--traces", "a", "--", "b"]


def test_bad_verdict_lines_are_capped_with_a_count(tmp_path: Path) -> None:
    """Two hundred bad lines print the first twenty and one line counting the rest."""
    path = tmp_path / "v.jsonl"
    path.write_text("".join(f"not json {i}\n" for i in range(200)), encoding="utf-8")
    result = _run("report", path)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == MAX_ERRORS_SHOWN + 1
    assert lines[0] == f"tracejudge report: {path}:1: not valid JSON: Expecting value (column 1)"
    assert lines[-1] == f"tracejudge report: … and {200 - MAX_ERRORS_SHOWN} more"


def test_a_trace_file_given_as_verdicts_is_one_error(tmp_path: Path) -> None:
    """A pretty-printed OTLP export among the verdicts: one line saying what it is and
    where it goes, not one error per line of it."""
    trace = write_json(tmp_path / "t.json", record_runs([RunSpec("c", "A", "ok")], 1))
    trace.write_text(json.dumps(json.loads(trace.read_text()), indent=2), encoding="utf-8")
    assert len(trace.read_text().splitlines()) > 50
    result = _run("report", trace)
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"tracejudge report: {trace}: an OTLP trace export, not a verdict")
    assert "report --traces" in line


def test_eval_caps_unreadable_files_with_a_count(tmp_path: Path) -> None:
    """``eval`` over a glob of 50 files that are not traces prints 20 problems and a count."""
    files = []
    for i in range(50):
        path = tmp_path / f"f{i:02}.json"
        path.write_text("{}", encoding="utf-8")
        files.append(path)
    result = _run("eval", "--rules", _rules(tmp_path), *files)
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if ": warning: " not in line]
    assert lines[-1] == f"tracejudge eval: … and {50 - MAX_ERRORS_SHOWN} more"
    assert len(lines) == MAX_ERRORS_SHOWN + 1
    assert "f00.json" in lines[0]


def _rules(tmp_path: Path) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(RULES_YAML, encoding="utf-8")
    return path
