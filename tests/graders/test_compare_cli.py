"""``tracejudge compare``: a candidate's runs against a baseline's, pair by pair.

No language model can run on these machines, so the judge's answers are scripted: the real
``openai`` SDK talks to a loopback server (tests/support/judge_server.py) answering with
replies written here, one per pair in order (``--workers 1``). The runs are real airline
dev-set runs: trial 0 of five tasks as the baseline, trial 1 as the candidate.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.support.judge_server import JudgeServer, openai_reply
from tracejudge.cli import main
from tracejudge.graders.pairwise import candidate_first
from tracejudge.model.run import Run
from tracejudge.report.loading import load_runs

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "examples" / "airline" / "tau-bench-dev" / "gpt-4o-airline.dev.json"
KEY = "sk-test-compare-key-0123456789"
TASKS = (0, 2, 4, 6, 8)
RULES = """version: 1
rules:
  - id: better-run
    layer: policy
    check:
      type: grader
      model: judge-1
      properties:
        - id: confirmed
          question: The user said yes before each booking change.
        - id: concise
          question: The agent asks for nothing it already knows.
"""


@functools.cache
def _records() -> dict[str, Any]:
    return {f"{r['task_id']}-{r['trial']}": r for r in json.loads(RUNS.read_text("utf-8"))}


@functools.cache
def _runs() -> dict[str, Run]:
    return {str(r.run_id): r for r in load_runs([RUNS]).runs}


def _files(tmp_path: Path, extra_candidate: tuple[str, ...] = ()) -> tuple[Path, Path, Path]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES, "utf-8")
    base, cand = tmp_path / "baseline.json", tmp_path / "candidate.json"
    base.write_text(json.dumps([_records()[f"{k}-0"] for k in TASKS]), "utf-8")
    ids = [f"{k}-1" for k in TASKS] + list(extra_candidate)
    cand.write_text(json.dumps([_records()[i] for i in ids]), "utf-8")
    return rules, base, cand


def _reply(task: int, seed: str, prefer: str) -> str:
    """The judge prefers ``prefer`` (baseline, candidate) on ``confirmed``, citing that
    run's last span, and calls ``concise`` a tie."""
    baseline, candidate = _runs()[f"{task}-0"], _runs()[f"{task}-1"]
    swap = candidate_first(seed, baseline, candidate)
    first_is = "candidate" if swap else "baseline"
    chosen = candidate if prefer == "candidate" else baseline
    side = "A" if prefer == first_is else "B"
    return json.dumps(
        {
            "properties": [
                {
                    "id": "confirmed",
                    "preferred": side,
                    "span_ids": [chosen.steps[-1].span_id],
                    "reason": f"{prefer} listed the details",
                },
                {"id": "concise", "preferred": "tie", "span_ids": [], "reason": "same"},
            ]
        }
    )


def _compare(tmp_path: Path, prefers: list[str], *extra: str, fmt: str = "json") -> Any:
    rules, base, cand = _files(tmp_path, ("10-1",))
    replies = [openai_reply(_reply(k, "s1", p)) for k, p in zip(TASKS, prefers, strict=True)]
    with JudgeServer(replies) as server:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url}
        args = ["compare", "--rules", str(rules), "--baseline", str(base)]
        args += ["--candidate", str(cand), "--seed", "s1", "--workers", "1", "--format", fmt]
        result = CliRunner().invoke(main, [*args, *extra], env=env)
        assert len(server.requests) == len(TASKS)
    return result


def test_compare_counts_picks_per_property_with_the_sign_test(tmp_path: Path) -> None:
    """Four pairs prefer the candidate and one the baseline on ``confirmed``; every pair
    ties on ``concise``. The task with no baseline run is unpaired, not compared."""
    result = _compare(tmp_path, ["candidate", "candidate", "baseline", "candidate", "candidate"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["pairs"] == 5
    assert doc["unpaired"] == {"baseline": [], "candidate": ["10-1"]}
    (grader,) = doc["graders"]
    assert grader["rule_id"] == "better-run"
    confirmed, concise = grader["properties"]
    assert confirmed["id"] == "confirmed"
    assert (confirmed["candidate"], confirmed["baseline"], confirmed["tie"]) == (4, 1, 0)
    assert confirmed["p_value"] == 0.375  # 2 * (C(5,0) + C(5,1)) / 2^5
    assert confirmed["candidate_share"] == 0.8
    assert (concise["tie"], concise["candidate"], concise["p_value"]) == (5, 0, 1.0)
    assert [(p["case_id"], p["baseline"], p["candidate"]) for p in grader["pairs"]] == [
        (f"tau-airline-{k}", f"{k}-0", f"{k}-1") for k in TASKS
    ]
    assert grader["pairs"][2]["picks"]["confirmed"]["pick"] == "baseline"


def test_the_text_table_and_fail_if_worse(tmp_path: Path) -> None:
    """The baseline preferred in all five pairs: p = 0.0625, not below 0.05, so
    ``--fail-if-worse`` passes at the default alpha and fails at 0.1."""
    prefers = ["baseline"] * 5
    result = _compare(tmp_path, prefers, "--fail-if-worse", fmt="text")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert (
        lines[0] == "compare: 5 pairs of runs of the same case; unpaired: 0 baseline, 1 candidate"
    )
    assert lines[1].startswith("grader better-run (openai judge-1, prompt ")
    assert lines[1].endswith(", evidence/1, seed s1)")
    assert lines[3].split() == [
        "confirmed",
        "0",
        "5",
        "0",
        "0",
        "0",
        "0/5",
        "0.0%",
        "[0.0%-43.4%]",
        "0.0625",
    ]
    worse = _compare(tmp_path, prefers, "--fail-if-worse", "--alpha", "0.1", fmt="text")
    assert worse.exit_code == 1
    assert "0.0625 (baseline better)" in worse.stdout


def test_bad_input_is_exit_2_with_the_reason(tmp_path: Path) -> None:
    """No grader rules, an unknown --grader, no key, no pairs: exit 2, nothing asked."""
    rules, base, cand = _files(tmp_path)
    plain = tmp_path / "plain.yaml"
    plain.write_text("version: 1\nrules:\n  - {id: r, layer: trajectory, check: {type: no_loop}}\n")
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}

    def run(*args: str, environ: dict[str, str] = env) -> Any:
        return CliRunner().invoke(main, ["compare", *args], env=environ)

    r = run("--rules", str(plain), "--baseline", str(base), "--candidate", str(cand))
    assert (r.exit_code, r.stderr) == (
        2,
        f"tracejudge compare: {plain}: no grader rules to compare with\n",
    )
    r = run(
        "--rules", str(rules), "--grader", "nope", "--baseline", str(base), "--candidate", str(cand)
    )
    assert (r.exit_code, r.stderr) == (
        2,
        "tracejudge compare: --grader nope: no grader rule of that id\n",
    )
    r = run(
        "--rules",
        str(rules),
        "--baseline",
        str(base),
        "--candidate",
        str(cand),
        environ={"OPENAI_API_KEY": ""},
    )
    assert r.exit_code == 2
    assert "needs a key: set the environment variable OPENAI_API_KEY" in r.stderr
    r = run(
        "--rules",
        str(rules),
        "--baseline",
        str(base),
        "--candidate",
        str(base.with_name("none.json")),
    )
    assert r.exit_code == 2
    assert "candidate: " in r.stderr
    lonely = tmp_path / "lonely.json"
    lonely.write_text(json.dumps([_records()["10-1"]]), "utf-8")
    r = run("--rules", str(rules), "--baseline", str(base), "--candidate", str(lonely))
    assert (r.exit_code, r.stderr) == (
        2,
        "tracejudge compare: no pairs: no case id has runs on both sides (tracejudge.case.id)\n",
    )
