"""The airline example: real tau-bench conversations judged by rules written from the policy.

These hold the example and ``make bench-accuracy`` together: the cases file is what the
documented command generates, ``tracejudge eval`` reads the records as users run it, and the
accuracy on the dev split does not fall below what docs/performance.md reports (the figures
are deterministic: same data, same rules, same engine).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.bench_module import bench_accuracy
from tests.support.guards import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]
AIRLINE = ROOT / "examples" / "airline"
DATA = AIRLINE / "tau-bench-dev" / "gpt-4o-airline.dev.json"
BIN = Path(sys.executable).parent


def test_the_cases_file_is_what_the_documented_command_generates(tmp_path: Path) -> None:
    out = tmp_path / "cases.jsonl"
    done = subprocess.run(
        [str(BIN / "tracejudge"), "cases", "from-tau-bench", str(DATA), "--output", str(out)],
        capture_output=True,
        text=True,
        check=False,
        timeout=PROCESS_S,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text() == (AIRLINE / "cases.jsonl").read_text()


def test_eval_judges_every_dev_run_from_the_records() -> None:
    done = subprocess.run(
        [
            str(BIN / "tracejudge"),
            "eval",
            "--rules",
            str(AIRLINE / "rules.yaml"),
            "--format",
            "json",
            str(DATA),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=PROCESS_S,
    )
    assert done.returncode == 1, done.stderr  # some runs fail: exit 1, not an input error
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == 100
    assert {v["case_id"] for v in verdicts} == {f"tau-airline-{t}" for t in range(0, 50, 2)}
    assert {v["verdict"] for v in verdicts} <= {"pass", "warn", "fail"}


def test_accuracy_on_the_dev_split_holds() -> None:
    """The floors are the figures in docs/performance.md; raise them when the engine improves."""
    bench = bench_accuracy()
    domain = bench.DOMAINS["airline"]
    truth = bench.airline_labels()
    assert sum(1 for lab in truth.values() if lab.reward == 0) == 51
    assert sum(1 for lab in truth.values() if lab.visible) == 32
    policy = bench.judge(domain, AIRLINE / "rules.yaml", None)
    cased = bench.judge(domain, AIRLINE / "rules.yaml", AIRLINE / "cases.jsonl", tools_only=True)
    visible = [k for k, lab in truth.items() if lab.visible]
    listed = domain.apart(truth)
    good = [k for k, lab in truth.items() if lab.reward == 1 and k not in listed]
    caught = sum(1 for k in visible if policy[k].verdict == "fail")
    alarms = sum(1 for k in good if policy[k].verdict == "fail")
    agree = sum(1 for k, lab in truth.items() if (cased[k].verdict == "fail") == (lab.reward == 0))
    assert len(good) == 30
    assert caught >= 30
    assert alarms == 0
    assert agree >= 98


def test_the_listed_breaches_are_what_breaches_py_prints() -> None:
    """README.md's machine-checked table is breaches.py's output (a run added to the data or
    a change to the checks shows up as a difference, never as a silent listing)."""
    done = subprocess.run(
        [sys.executable, str(AIRLINE / "breaches.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    table = done.stdout.strip()
    assert table.count("\n") == 12  # header, rule, 11 runs
    assert table in (AIRLINE / "README.md").read_text()
