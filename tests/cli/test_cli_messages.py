"""What the offline commands print when the input is wrong: one clear line per problem.

Each test here is a message a new user met and could not act on (a stray placeholder,
thousands of lines for one wrong file); the commands run in-process through CliRunner.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from tests.cli.cli_traces import RunSpec, record_runs, write_json
from tracejudge.cli import main


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
