"""``tracejudge gate`` over verdict JSON lines: decisions as exit statuses (0 pass, 1 fail,
3 inconclusive, 2 bad input), through click's CliRunner in-process."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.gate.gate_support import verdict
from tracejudge.cli import main


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["gate", *(str(a) for a in args)], catch_exceptions=False)


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    return path


def _traffic(canary_fail_rate: float, n: int = 200, seed: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        variant = "canary" if i % 4 == 0 else "stable"  # a 25% canary stage
        rate = canary_fail_rate if variant == "canary" else 0.01
        outcome = "fail" if rng.random() < rate else "pass"
        lines.append(verdict("refund", variant, outcome, i, decided_at=1_800_000_000.0 + i))
    return lines


def test_failing_canary_exits_1_and_healthy_canary_is_not_failed(tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad.jsonl", _traffic(0.30))
    r = _run(bad, "--agent", "refund", "--variant", "canary", "--baseline", "stable")
    assert r.exit_code == 1, r.output
    assert r.output.startswith("fail: ")
    assert "upper bound below baseline 'stable'" in r.output
    good = _write(tmp_path / "good.jsonl", _traffic(0.0, n=400))
    r = _run(good, "--agent", "refund", "--variant", "canary", "--baseline", "stable")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("pass: ")


def test_low_volume_exits_3_and_json_is_the_http_answer(tmp_path: Path) -> None:
    path = _write(tmp_path / "v.jsonl", [verdict("refund", "canary", "pass", i) for i in range(4)])
    r = _run(path, "--agent", "refund", "--variant", "canary", "--format", "json")
    assert r.exit_code == 3, r.output
    answer = json.loads(r.output)
    assert answer["decision"] == "inconclusive"
    assert (answer["runs"], answer["passes"], answer["hard_failures"]) == (4, 4, 0)
    assert answer["baseline"] is None
    assert "fewer than min_runs=20" in answer["reason"]


def test_one_policy_violation_exits_1(tmp_path: Path) -> None:
    lines = [verdict("refund", "canary", "pass", i) for i in range(100)]
    lines.append(verdict("refund", "canary", "fail", 100, policy=True))
    r = _run(_write(tmp_path / "v.jsonl", lines), "--agent", "refund", "--variant", "canary")
    assert r.exit_code == 1, r.output
    assert "hard-gate policy failure" in r.output


def test_window_uses_decided_at(tmp_path: Path) -> None:
    """Old failures drop out of a 60 s window measured back from the newest line."""
    old = [verdict("a", "v", "fail", i, decided_at=1000.0 + i) for i in range(20)]
    new = [verdict("a", "v", "pass", 50 + i, decided_at=9000.0 + i) for i in range(40)]
    path = _write(tmp_path / "v.jsonl", old + new)
    args = ("--agent", "a", "--variant", "v", "--threshold", "0.9")
    assert _run(path, *args, "--window", "1m").exit_code == 0
    assert _run(path, *args).exit_code in (1, 3)  # with the failures: not a pass


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--window", "soon"), "not a duration"),
        (("--threshold", "1.5"), "--threshold"),
        (("--min-runs", "0"), "--min-runs"),
        (("--baseline", "canary"), "must differ from --variant"),
    ],
)
def test_bad_parameters_exit_2_naming_them(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    path = _write(tmp_path / "v.jsonl", [verdict("a", "canary", "pass", 1, decided_at=1.0)])
    r = _run(path, "--agent", "a", "--variant", "canary", *args)
    assert r.exit_code == 2, r.output
    assert message in r.output


def test_bad_verdict_file_and_window_without_times_exit_2(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"trace_id": "zz"}\n', encoding="utf-8")
    r = _run(broken, "--agent", "a", "--variant", "v")
    assert r.exit_code == 2
    assert "broken.jsonl:1" in r.output
    untimed = _write(tmp_path / "eval.jsonl", [verdict("a", "v", "pass", 1)])
    r = _run(untimed, "--agent", "a", "--variant", "v", "--window", "10m")
    assert r.exit_code == 2
    assert "decided_at" in r.output


def test_an_agent_or_variant_with_no_runs_names_what_was_seen(tmp_path: Path) -> None:
    """A misspelt --agent or --variant: inconclusive, and the reason lists the agents and
    variants the lines do hold (it used to say only "no judged runs")."""
    path = _write(tmp_path / "v.jsonl", _traffic(0.0, n=8))
    r = _run(path, "--agent", "refnud", "--variant", "canary")
    assert r.exit_code == 3, r.output
    assert r.output == (
        "inconclusive: no judged runs of agent 'refnud' variant 'canary'; "
        "seen: agent 'refund' (variants 'canary', 'stable')\n"
    )
    r = _run(path, "--agent", "refund", "--variant", "canry")
    assert r.output.endswith("seen: agent 'refund' (variants 'canary', 'stable')\n")
