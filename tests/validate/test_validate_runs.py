"""``tracejudge validate`` judging real runs: the refund example's four traces (recorded from
the example agent, examples/refund/traces/) labelled by hand here, and the dev sets'
committed labels files, checked against what bench/dev_labels.py builds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result

from tracejudge.cli import main

ROOT = Path(__file__).resolve().parents[2]
REFUND = ROOT / "examples" / "refund"
TRACES = sorted((REFUND / "traces").glob("*.json"))


def _run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [*(str(a) for a in args)], catch_exceptions=False)


def _labels(tmp_path: Path) -> Path:
    """By hand, from examples/refund/README.md: only ``healthy`` refunds the duplicate order
    in full; ``half_amount`` refunds half of it (a baseline comparison shows it),
    ``silent_failure`` claims a refund that failed, ``wrong_order`` refunds the other order."""
    path = tmp_path / "labels.jsonl"
    rows = [
        ("example-healthy", "pass"),
        ("example-half_amount", "fail"),
        ("example-silent_failure", "fail"),
        ("example-wrong_order", "fail"),
    ]
    path.write_text(
        "".join(
            json.dumps({"run": run, "case": "refund-duplicate-charge", "labels": {"outcome": v}})
            + "\n"
            for run, v in rows
        ),
        encoding="utf-8",
    )
    return path


def test_rules_alone_miss_the_half_refund_and_baselines_are_needed(tmp_path: Path) -> None:
    """Without a baselines directory the rules pass ``half_amount`` (its amount is plausible;
    only the reviewed run shows half is wrong): false pass 1/3, false fail 0/1, agreement 3/4.
    """
    labels = _labels(tmp_path)
    result = _run(
        "validate", "--labels", labels, "--rules", REFUND / "rules.yaml", *TRACES, "--json"
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    (outcome,) = doc["figures"]
    assert outcome["confusion"] == {
        "pass": {"pass": 1, "fail": 0, "undecided": 0, "not_evaluated": 0},
        "fail": {"pass": 1, "fail": 2, "undecided": 0, "not_evaluated": 0},
    }
    assert [(d["run"], d["judged"], d["primary"]) for d in outcome["disagreements"]] == [
        ("example-half_amount", "pass", None)
    ]
    result = _run(
        "validate",
        "--labels",
        labels,
        "--rules",
        REFUND / "rules.yaml",
        *TRACES,
        "--gate",
        "outcome.false_pass<=0",
    )
    assert result.exit_code == 1
    assert "gate FAIL: outcome.false_pass<=0: outcome (all) false_pass = 0.3333 (1/3;" in (
        result.output
    )


def test_judging_now_and_reading_eval_output_give_the_same_figures(tmp_path: Path) -> None:
    labels = _labels(tmp_path)
    out = tmp_path / "verdicts.jsonl"
    rules = REFUND / "rules.yaml"
    result = _run("eval", "--rules", rules, *TRACES, "--output", out, "-q")
    assert result.exit_code == 1  # two runs fail
    judged = _run("validate", "--labels", labels, "--rules", rules, *TRACES, "--json")
    read = _run("validate", "--labels", labels, "--verdicts", out, "--json")
    assert judged.exit_code == read.exit_code == 0
    now, before = json.loads(judged.output), json.loads(read.output)
    assert now["figures"] == before["figures"]
    assert now["judge"] == str(rules)
    version = json.loads(out.read_text().splitlines()[0])["rules_version"]
    assert version.startswith("sha256:")
    assert now["judge_version"] == before["judge_version"] == {"rules": [version]}
    assert before["judge"] == f"verdicts in {out}"


def test_the_dev_labels_files_are_what_dev_labels_py_builds() -> None:
    """examples/airline/labels.jsonl and examples/retail/labels.jsonl come from the benchmarks'
    rewards and the READMEs' listed breaches (``make dev-labels``), never by hand."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "dev_labels.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    airline = [json.loads(line) for line in (ROOT / "examples/airline/labels.jsonl").open()]
    assert len(airline) == 100
    policy = [d["labels"]["policy"] for d in airline]
    assert (policy.count("fail"), policy.count("pass"), policy.count(None)) == (51, 30, 19)
    retail = [json.loads(line) for line in (ROOT / "examples/retail/labels.jsonl").open()]
    assert len(retail) == 480
    policy = [d["labels"]["policy"] for d in retail]
    assert (policy.count("fail"), policy.count("pass"), policy.count(None)) == (433, 29, 18)


AIRLINE = ROOT / "examples" / "airline"
AIRLINE_RUNS = AIRLINE / "tau-bench-dev" / "gpt-4o-airline.dev.json"


def test_airline_dev_set_holds_its_floors_as_gates() -> None:
    """The real tau-bench airline runs against their committed labels, the rules on the
    policy axis and the cases on task success in one judging: the floors of
    tests/examples/test_airline.py as gates (no unlisted reward-1 run failed, at most 2 of
    the 51 policy failures missed, cases agreeing with the reward on >= 98 of 100 runs)."""
    result = _run(
        "validate",
        "--labels",
        AIRLINE / "labels.jsonl",
        "--rules",
        AIRLINE / "rules.yaml",
        "--cases",
        AIRLINE / "cases.jsonl",
        "--axis",
        "policy=rules",
        "--axis",
        "task_success=cases",
        "--gate",
        "policy.false_fail<=0",
        "--gate",
        "policy.false_pass<=0.04",
        "--gate",
        "task_success.agreement>=0.98",
        "--json",
        AIRLINE_RUNS,
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [(g["gate"], g["passed"]) for g in doc["gates"]] == [
        ("policy.false_fail<=0", True),
        ("policy.false_pass<=0.04", True),
        ("task_success.agreement>=0.98", True),
    ]
    assert [(f["axis"], f["runs"]) for f in doc["figures"]] == [
        ("policy", 81),
        ("task_success", 100),
    ]
    assert set(doc["judge_version"]) == {"rules", "cases"}
    tools_only = _run(
        "validate",
        "--labels",
        AIRLINE / "labels.jsonl",
        "--rules",
        AIRLINE / "rules.yaml",
        "--tools-only",
        "--cases",
        AIRLINE / "cases.jsonl",
        "--json",
        AIRLINE_RUNS,
    )
    (rules_only,) = json.loads(tools_only.output)["judge_version"]["rules"]
    assert rules_only == doc["judge_version"]["rules"][0] + "+tools-only"
