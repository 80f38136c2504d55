"""What people expect of a command line: ``python -m tracejudge``, shell completion, and a
starter rules file hooked to the schema for editors (``tracejudge rules init``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import yaml
from click.testing import CliRunner

from tracejudge.cli import main
from tracejudge.cli.rules import schema_reference
from tracejudge.engine import load_rules
from tracejudge.engine.ruleschema import OUTPUT as SCHEMA

TRACEJUDGE = Path(sys.executable).parent / "tracejudge"


def test_python_dash_m_is_the_command() -> None:
    """``python -m tracejudge`` runs the same command, named ``tracejudge`` in its help."""
    done = subprocess.run(
        [sys.executable, "-m", "tracejudge", "rules", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith("Usage: tracejudge rules [OPTIONS] COMMAND [ARGS]...")
    assert "init" in done.stdout


def test_shell_completion_completes_commands_and_options() -> None:
    """The documented bash hook: the script, then command and option names completed."""

    def complete(words: str, cword: int) -> str:
        env = {
            **os.environ,
            "_TRACEJUDGE_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(cword),
        }
        return subprocess.run(
            [str(TRACEJUDGE)], env=env, capture_output=True, text=True, check=True
        ).stdout

    source = subprocess.run(
        [str(TRACEJUDGE)],
        env={**os.environ, "_TRACEJUDGE_COMPLETE": "bash_source"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "complete -o nosort -F _tracejudge_completion tracejudge" in source
    assert complete("tracejudge ev", 1).split() == ["plain,eval"]
    assert complete("tracejudge eval --fail", 2).split() == ["plain,--failures-only"]


def test_rules_init_writes_a_valid_file_hooked_to_the_schema(tmp_path: Path) -> None:
    """The starter file loads and passes ``rules check``; its first line points the YAML
    language server at the shipped schema, which the file satisfies."""
    path = tmp_path / "rules.yaml"
    result = CliRunner().invoke(main, ["rules", "init", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"wrote {path}; check it with: tracejudge rules check {path}\n"
    first = path.read_text("utf-8").splitlines()[0]
    assert first == f"# yaml-language-server: $schema={SCHEMA.resolve().as_posix()}"
    schema = json.loads(Path(first.split("$schema=", 1)[1]).read_text("utf-8"))
    jsonschema.validate(yaml.safe_load(path.read_text("utf-8")), schema)
    assert len(load_rules(path).rules) == 7
    check = CliRunner().invoke(main, ["rules", "check", str(path)])
    assert check.stdout == "1 rules file(s) valid, 7 rule(s)\n"
    again = CliRunner().invoke(main, ["rules", "init", str(path)])
    assert (again.exit_code, again.stderr) == (
        2,
        f"Error: {path} exists; pass --force to overwrite it\n",
    )
    url = "https://example.org/rules.schema.json"
    forced = CliRunner().invoke(main, ["rules", "init", str(path), "--force", "--schema", url])
    assert forced.exit_code == 0
    assert path.read_text("utf-8").startswith(f"# yaml-language-server: $schema={url}\n")


def test_the_schema_is_named_relative_to_a_project_that_holds_it(tmp_path: Path) -> None:
    """A schema inside the project (its .venv) is named relatively: the same path for
    everyone who checks the project out; one elsewhere absolutely."""
    schema = tmp_path / ".venv" / "lib" / "rules.schema.json"
    assert schema_reference(schema, tmp_path / "rules.yaml") == ".venv/lib/rules.schema.json"
    elsewhere = tmp_path / "elsewhere" / "rules.schema.json"
    project = tmp_path / "project" / "rules.yaml"
    assert schema_reference(elsewhere, project) == elsewhere.resolve().as_posix()
