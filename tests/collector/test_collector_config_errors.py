"""A config file with several mistakes gets all of them at once, each with its key path
(issue 20, "Bad input"): ``serve`` exits 2 listing every one, and ``build_config`` raises
one ``ConfigError`` whose ``problems`` are the same list, in the file's order."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tracejudge.cli import main
from tracejudge.collector.config import ConfigError, build_config, load_config_file

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "refund" / "rules.yaml"

BROKEN = """\
rules: {rules}
decision_wait: soon
grpc_port: 70000
forward:
  - http://127.0.0.1:4318
  - url: https://backend.example
    headers:
      "bad name": x
      api-key: ""
  - ftp://elsewhere:21
  - url: https://other.example
    verify: false
max_traces: 0
tick: 5s
max_disk_queue_bytes: 1MiB
colour: blue
"""

EXPECTED = [
    "decision_wait: expected a duration like '2s' or '200ms', got 'soon'",
    "forward[1].headers: 'bad name' is not a header name",
    "forward[1].headers: api-key: expected a non-empty string",
    "forward[3]: unknown key 'verify' (known: ca_file, client_cert, client_key, headers, "
    "insecure_skip_verify, name, url)",
    "unknown key 'colour'",
    "grpc_port: 70000 is not a port number",
    "tick: must be in (0, 1s]",
    "max_traces: must be positive",
    "max_disk_queue_bytes: needs queue_dir (there is no disk queue)",
]


def _broken(tmp_path: Path) -> Path:
    conf = tmp_path / "serve.yaml"
    conf.write_text(BROKEN.format(rules=RULES), encoding="utf-8")
    return conf


def test_every_mistake_is_reported_with_its_path(tmp_path: Path) -> None:
    """Nine mistakes in one file: nine problems, none lost behind the first. The forward
    URL check (``forward[2]: ftp``) is a rule over the parsed entries, so it waits until
    the entries parse; the rest are independent and all reported."""
    with pytest.raises(ConfigError) as err:
        build_config(load_config_file(_broken(tmp_path)), {})
    problems = [p.split(" (known: ", 1)[0] if p.startswith("unknown key") else p
                for p in err.value.problems]  # fmt: skip
    assert problems == EXPECTED
    assert str(err.value).splitlines()[0] == "9 problems in the configuration:"


def test_serve_exits_2_listing_all_of_them(tmp_path: Path) -> None:
    """The real command line: exit status 2, every problem on its own line."""
    done = CliRunner().invoke(main, ["serve", "--config", str(_broken(tmp_path))])
    assert done.exit_code == 2, done.output
    assert "9 problems in the configuration:" in done.output
    lines = [line.strip() for line in done.output.splitlines()]
    for problem in EXPECTED:
        if problem.startswith("unknown key"):
            assert any(line.startswith(problem) for line in lines), problem
        else:
            assert problem in lines, problem


def test_a_rule_over_a_key_that_failed_to_parse_is_not_run() -> None:
    """``decision_wait: soon`` leaves the default in place; the rule comparing it with
    ``decision_wait_after_root`` would judge a value nobody wrote, so it is skipped, while
    the parse error and an unrelated rule's finding are both reported."""
    with pytest.raises(ConfigError) as err:
        build_config(
            {"decision_wait": "soon", "decision_wait_after_root": "1h", "shadow_wait": 0},
            {},
        )
    assert list(err.value.problems) == [
        "decision_wait: expected a duration like '2s' or '200ms', got 'soon'",
        "shadow_wait: must be positive",
    ]


def test_the_forward_url_rule_names_the_entry() -> None:
    """Once the entries parse, each bad URL is named by its index."""
    with pytest.raises(ConfigError) as err:
        build_config({"forward": ["http://127.0.0.1:4318", "ftp://x:21", "grpc://y"]}, {})
    assert [p.split(":", 1)[0] for p in err.value.problems] == ["forward[1]", "forward[2]"]


def test_one_mistake_reads_as_before() -> None:
    """A single problem is the message itself, no header: what scripts already match."""
    with pytest.raises(ConfigError) as err:
        build_config({"tick": "5s"}, {})
    assert str(err.value) == "tick: must be in (0, 1s]"
    assert err.value.problems == ("tick: must be in (0, 1s]",)


def test_the_grader_keys_are_checked_with_the_others() -> None:
    """The graders' budgets and ``grader_traces``: a bad type and a bad value each named by
    its key, all reported together; ``grader_tokens_per_minute`` 0 is off, not a mistake."""
    with pytest.raises(ConfigError) as err:
        build_config(
            {
                "grader_max_concurrent": "four",
                "grader_calls_per_minute": 0,
                "grader_tokens_per_minute": -1,
                "grader_traces": True,
            },
            {},
        )
    assert list(err.value.problems) == [
        "grader_max_concurrent: expected an integer, got 'four'",
        "grader_traces: needs forward (a trace backend; they never go to output)",
        "grader_calls_per_minute: must be positive",
        "grader_tokens_per_minute: must not be negative (0 turns it off)",
    ]
    with pytest.raises(ConfigError, match=r"^grader_tokens_per_minute: expected an integer"):
        build_config({"grader_tokens_per_minute": "10k"}, {})
    ok = build_config({"grader_tokens_per_minute": 0, "forward": ["http://127.0.0.1:4318"]}, {})
    assert (ok.grader_tokens_per_minute, ok.grader_traces) == (0, False)


def test_serve_grader_traces_flag_needs_a_backend() -> None:
    """``--grader-traces`` is the config key's flag: without ``--forward`` serve exits 2."""
    done = CliRunner().invoke(main, ["serve", "--rules", str(RULES), "--grader-traces"])
    assert done.exit_code == 2, done.output
    assert "grader_traces: needs forward" in done.output
