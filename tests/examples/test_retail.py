"""The retail example: real tau2-bench conversations judged by rules written from the policy.

These hold the example and ``make bench-accuracy`` together: a clone stands alone (the data
is in the repository), the cases file is what the documented command generates, ``eval``
reads the results files as users run it, and the dev figures do not fall below what
docs/performance.md reports (deterministic: same data, same rules, same engine).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.bench_module import bench_accuracy

ROOT = Path(__file__).resolve().parents[2]
RETAIL = ROOT / "examples" / "retail"
BIN = Path(sys.executable).parent


def test_the_example_is_tracked_so_a_clone_stands_alone() -> None:
    """Every file the example's commands read is committed (a clone has nothing beside it)."""
    git = shutil.which("git")
    assert git is not None
    done = subprocess.run(
        [git, "ls-files", "examples/retail"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    tracked = set(done.stdout.split())
    sims = sorted(
        p.relative_to(ROOT).as_posix() for p in (RETAIL / "tau2-retail-dev/sims").iterdir()
    )
    assert len(sims) == 12
    needed = {
        *sims,
        "examples/retail/rules.yaml",
        "examples/retail/cases.jsonl",
        "examples/retail/README.md",
        "examples/retail/tau2-retail-dev/policy.md",
        "examples/retail/tau2-retail-dev/LICENSE-MIT-tau2-bench.txt",
        "examples/retail/tau2-retail-dev/LICENSE-MIT-bogoliubon-fork.txt",
        "examples/retail/tau2-retail-dev/MANIFEST.tsv",
    }
    assert needed <= tracked


def test_eval_runs_from_a_clean_clone(tmp_path: Path) -> None:
    """Clone the repository (committed files only) and judge every dev run there, rules and
    cases together, as the README says."""
    git = shutil.which("git")
    assert git is not None
    clone = tmp_path / "clone"
    subprocess.run([git, "clone", "-q", str(ROOT), str(clone)], check=True)
    example = clone / "examples" / "retail"
    sims = sorted((example / "tau2-retail-dev" / "sims").glob("*.json.gz"))
    done = subprocess.run(
        [
            str(BIN / "tracejudge"), "eval",
            "--rules", str(example / "rules.yaml"),
            "--cases", str(example / "cases.jsonl"),
            "--format", "json", *map(str, sims),
        ],
        capture_output=True, text=True, check=False, cwd=clone,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # some runs fail: exit 1, not an input error
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == 480
    assert {v["case_id"] for v in verdicts} == {
        line["id"] for line in map(json.loads, (example / "cases.jsonl").read_text().splitlines())
    }
    assert done.stderr.count("40 of 40 simulation(s) read, 0 skipped; 40 task(s)") == 12


def test_the_cases_file_is_what_the_documented_command_generates(tmp_path: Path) -> None:
    out = tmp_path / "cases.jsonl"
    sims = sorted((RETAIL / "tau2-retail-dev" / "sims").glob("*.json.gz"))
    done = subprocess.run(
        [str(BIN / "tracejudge"), "cases", "from-tau2", *map(str, sims), "--output", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text() == (RETAIL / "cases.jsonl").read_text()


def test_accuracy_on_the_dev_set_holds() -> None:
    """The floors are the figures in docs/performance.md; raise them when the engine improves."""
    bench = bench_accuracy()
    domain = bench.DOMAINS["retail"]
    truth = bench.retail_labels()
    assert len(truth) == 480
    assert sum(1 for lab in truth.values() if lab.reward == 0) == 111
    assert sum(1 for lab in truth.values() if lab.visible) == 93
    policy = bench.judge(domain, domain.rules, None)
    cased = bench.judge(domain, domain.rules, domain.cases, tools_only=True)
    visible = [k for k, lab in truth.items() if lab.visible]
    caught = sum(1 for k in visible if policy[k].verdict == "fail")
    agree = sum(1 for k, lab in truth.items() if (cased[k].verdict == "fail") == (lab.reward == 0))
    listed = domain.apart(truth)
    unlisted_alarms = sum(
        1
        for k, lab in truth.items()
        if lab.reward == 1 and k not in listed and policy[k].verdict == "fail"
    )
    assert caught >= 90
    assert agree >= 479
    assert unlisted_alarms == 0
