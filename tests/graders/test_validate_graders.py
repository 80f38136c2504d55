"""``tracejudge validate`` measures grader rules too, and records which grader versions
were validated; ``eval --validations`` says whether the current one was.

No language model can run on these machines, so the judge's answers are scripted: the real
``openai`` SDK talks to a loopback server (tests/support/judge_server.py) answering with
replies written here, one per run in order (``--grader-workers 1``). The runs are four real
airline dev-set runs; the labels are hand-written so the rates can be computed by hand.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.support.judge_server import JudgeServer, openai_reply
from tracejudge.cli import main
from tracejudge.model.run import Run
from tracejudge.report.loading import load_runs

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "examples" / "airline" / "tau-bench-dev" / "gpt-4o-airline.dev.json"
KEY = "sk-test-validate-key-0123456789"
IDS = ("0-0", "2-0", "4-0", "6-0")
ANSWERS = ("yes", "no", "yes", "no")
LABELS = ("pass", "fail", "fail", "pass")  # 4-0 a false pass, 6-0 a false fail
RULES = """version: 1
rules:
  - id: claims-backed
    layer: outcome
    check:
      type: grader
      model: judge-1
      when: always
      properties:
        - id: claims_backed
          question: {question}
"""
QUESTION = "Every action the agent says it took is backed by a successful tool result."


@functools.cache
def _runs() -> dict[str, Run]:
    return {str(r.run_id): r for r in load_runs([RUNS]).runs}


def _files(tmp_path: Path, question: str = QUESTION) -> tuple[Path, Path, Path]:
    records = {f"{r['task_id']}-{r['trial']}": r for r in json.loads(RUNS.read_text("utf-8"))}
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps([records[i] for i in IDS]), "utf-8")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(
            json.dumps({"run": i, "labels": {"claims": lab}}) + "\n"
            for i, lab in zip(IDS, LABELS, strict=True)
        ),
        "utf-8",
    )
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES.format(question=question), "utf-8")
    return runs, labels, rules


def _reply(run_id: str, answer: str) -> Any:
    cite = _runs()[run_id].steps[-1].span_id
    body = {"properties": [{"id": "claims_backed", "answer": answer, "span_ids": [cite]}]}
    return openai_reply(json.dumps(body))


def _validate(tmp_path: Path, *extra: str) -> Any:
    runs, labels, rules = _files(tmp_path)
    replies = [_reply(i, a) for i, a in zip(IDS, ANSWERS, strict=True)]
    with JudgeServer(replies) as server:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url}
        args = ["validate", "--labels", str(labels), "--rules", str(rules), "--json"]
        result = CliRunner().invoke(
            main, [*args, "--grader-workers", "1", *extra, str(runs)], env=env
        )
        asked = len(server.requests)
    return result, asked


def test_validate_runs_the_graders_and_counts_their_errors(tmp_path: Path) -> None:
    """The grader said yes, no, yes, no against labels pass, fail, fail, pass: one false
    pass of two fails, one false fail of two passes; the judge version names the grader."""
    result, asked = _validate(tmp_path)
    assert result.exit_code == 0, result.output
    assert asked == 4
    doc = json.loads(result.stdout)
    (figures,) = doc["figures"]
    assert (figures["false_pass"]["count"], figures["false_pass"]["of"]) == (1, 2)
    assert (figures["false_fail"]["count"], figures["false_fail"]["of"]) == (1, 2)
    (grader,) = doc["judge_version"]["graders"]
    assert grader.startswith("claims-backed=openai/judge-1/")
    assert grader.endswith("/evidence/1")


def test_without_graders_the_grader_rule_decides_nothing(tmp_path: Path) -> None:
    """``--no-graders``: the rule is not_applicable, every run passes, both fails are
    false passes, and no model is asked."""
    result, asked = _validate(tmp_path, "--no-graders")
    assert result.exit_code == 0, result.output
    assert asked == 0
    (figures,) = json.loads(result.stdout)["figures"]
    assert (figures["false_pass"]["count"], figures["false_fail"]["count"]) == (2, 0)


def test_a_recorded_validation_is_named_by_eval_until_the_rubric_changes(tmp_path: Path) -> None:
    """``--record`` appends the grader's version and figures; ``eval --validations`` cites
    them for that version and warns when the rubric changed (a new version, unvalidated)."""
    record = tmp_path / "validations.jsonl"
    result, _ = _validate(tmp_path, "--record", str(record))
    assert result.exit_code == 0, result.output
    (line,) = record.read_text("utf-8").splitlines()
    saved = json.loads(line)
    assert saved["labels_sha256"].startswith("sha256:")
    assert saved["figures"][0]["false_pass"]["count"] == 1
    runs, _, rules = _files(tmp_path)
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    args = ["eval", "--rules", str(rules), "--validations", str(record), "--no-graders"]
    quiet = CliRunner().invoke(main, [*args, str(runs)], env=env)
    assert "validat" not in quiet.stderr  # no graders run: nothing to say
    replies = [_reply(i, "yes") for i in IDS]
    with JudgeServer(replies) as server:
        env["OPENAI_BASE_URL"] = server.base_url
        args = ["eval", "--rules", str(rules), "--validations", str(record), str(runs)]
        seen = CliRunner().invoke(main, args, env=env)
        assert (
            f"tracejudge eval: grader claims-backed: validated {saved['recorded_at']} on "
            f"{tmp_path / 'labels.jsonl'}: claims: false pass 1/2, false fail 1/2\n"
        ) in seen.stderr
        _files(tmp_path, QUESTION + " Quoted amounts included.")
        changed = CliRunner().invoke(main, args, env=env)
    assert "warning: grader claims-backed (openai/judge-1/" in changed.stderr
    assert f"has no validation in {record}" in changed.stderr
    record.write_text("not json\n", "utf-8")
    with JudgeServer(replies) as server:
        env["OPENAI_BASE_URL"] = server.base_url
        bad = CliRunner().invoke(main, args, env=env)
    assert bad.exit_code == 2
    assert f"{record}: line 1: not a validation record" in bad.stderr
