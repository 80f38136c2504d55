"""Graders over verdicts, and ``tracejudge eval`` running them.

No language model can run on these machines, so the judge's answers are scripted: the
real ``openai`` SDK talks to a loopback server (tests/support/judge_server.py) that
answers with replies written here. The runs and the deterministic rules are real: the
tau-bench airline dev set and examples/airline/rules.yaml.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from click.testing import CliRunner

from tests.support.judge_server import JudgeServer, openai_reply, rate_limited
from tracejudge.cli import main
from tracejudge.engine import Engine, RuleSet, load_rules_text
from tracejudge.engine.verdict import Verdict
from tracejudge.graders.apply import GraderRule, apply_graders, grader_specs
from tracejudge.graders.grade import Grader
from tracejudge.graders.providers import OpenAIProvider
from tracejudge.model.run import Run
from tracejudge.report.loading import load_runs

ROOT = Path(__file__).resolve().parents[2]
AIRLINE = ROOT / "examples" / "airline"
RUNS = AIRLINE / "tau-bench-dev" / "gpt-4o-airline.dev.json"
KEY = "sk-test-judge-key-0123456789"


def _grader_rule(when: str = "undecided", severity: str = "fail") -> str:
    return f"""
  - id: claims-backed
    layer: outcome
    severity: {severity}
    description: what the agent says it did, it did
    check:
      type: grader
      model: judge-1
      when: {when}
      properties:
        - id: claims_backed
          question: Every action the agent says it took is backed by a successful tool result.
"""


@functools.cache
def _rules(when: str = "undecided", severity: str = "fail") -> RuleSet:
    text = (AIRLINE / "rules.yaml").read_text("utf-8") + _grader_rule(when, severity)
    return load_rules_text(text, "airline+grader.yaml")


@functools.cache
def _runs() -> dict[str, Run]:
    return {str(r.run_id): r for r in load_runs([RUNS]).runs}


def _judge(run_id: str, server: JudgeServer, when: str = "undecided") -> tuple[Verdict, Verdict]:
    """The engine's verdict and the verdict with the grader applied."""
    rules = _rules(when)
    ((rule, spec, _),) = grader_specs(rules)
    grader = Grader(spec, OpenAIProvider(KEY, server.base_url, spec.timeout_s))
    run = _runs()[run_id]
    before = Engine(rules).judge(run)
    return before, apply_graders(before, run, [GraderRule(rule, grader)])


def _reply(answer: str, *spans: str) -> str:
    prop = {"id": "claims_backed", "answer": answer, "span_ids": list(spans), "reason": "why"}
    return json.dumps({"properties": [prop]})


def _outcome(v: Verdict) -> tuple[str, str]:
    o = next(o for o in v.outcomes if o.rule_id == "claims-backed")
    return o.result, o.explanation


def test_by_default_only_undecided_runs_are_graded() -> None:
    """Run 6-0 passes every deterministic rule: the grader is not asked, and its outcome
    says why it did not run. Run 2-2 has undecided confirmations: it is asked."""
    with JudgeServer([openai_reply(_reply("yes", "8e6e4f0ab9a1a71d"))]) as server:
        before, after = _judge("6-0", server)
        assert server.requests == []
        assert after.to_dict() == before.to_dict()
        assert _outcome(after) == (
            "not_applicable",
            "not run: the deterministic checks left nothing undecided (when: undecided)",
        )
        _judge("2-2", server)
        assert len(server.requests) == 1


def test_a_grader_yes_never_overrides_a_hard_gate() -> None:
    """Run 2-2 fails a deterministic rule; the grader's yes leaves it failed, with the same
    findings and primary, and adds its passing outcome with its identity."""
    run = _runs()["2-2"]
    cite = run.steps[-1].span_id
    with JudgeServer([openai_reply(_reply("yes", cite))]) as server:
        before, after = _judge("2-2", server)
    assert before.verdict == after.verdict == "fail"
    assert after.findings == before.findings
    assert after.primary == before.primary
    (evaluation,) = after.to_dict()["evaluations"]
    assert evaluation["gen_ai.evaluation.score.label"] == "pass"
    assert evaluation["tracejudge.grader.model"] == "judge-1"
    assert evaluation["tracejudge.grader.rendering_version"] == "evidence/1"
    assert evaluation["tracejudge.grader.properties"] == ["claims_backed=yes"]


def test_a_grader_no_fails_a_run_the_rules_passed() -> None:
    """``when: always`` on run 6-0: the grader's no is F-GRADER-PROPERTY_FAILED at the rule's
    severity, citing the span the model cited, on the outcome event with the identity."""
    run = _runs()["6-0"]
    cite = run.steps[-1].span_id
    with JudgeServer([openai_reply(_reply("no", cite, "ffffffffffffffff"))]) as server:
        before, after = _judge("6-0", server, when="always")
    assert (before.verdict, after.verdict) == ("pass", "fail")
    assert after.layers["outcome"] == "fail"
    (finding,) = after.findings
    assert finding.to_dict() == {
        "code": "F-GRADER-PROPERTY_FAILED",
        "severity": "fail",
        "layer": "outcome",
        "rule": "claims-backed",
        "span_ids": [cite],
        "explanation": "claims_backed: Every action the agent says it took is backed by a "
        "successful tool result. (grader: no, 100% of 1) why",
    }
    assert after.primary == finding
    (evaluation,) = after.to_dict()["evaluations"]
    ident = {k: v for k, v in evaluation.items() if k.startswith("tracejudge.grader.")}
    prompt_hash = ident.pop("tracejudge.grader.prompt_hash")
    assert len(prompt_hash) == 16
    assert ident == {
        "tracejudge.grader.provider": "openai",
        "tracejudge.grader.model": "judge-1",
        "tracejudge.grader.rendering_version": "evidence/1",
        "tracejudge.grader.samples": 1,
        "tracejudge.grader.agreement": 1.0,
        "tracejudge.grader.cached": 0,
        "tracejudge.grader.citations_dropped": 1,
        "tracejudge.grader.properties": ["claims_backed=no"],
    }
    assert evaluation["gen_ai.evaluation.score.label"] == "fail"


def test_no_answer_is_not_evaluated_never_a_pass() -> None:
    """A 429 on run 6-0 (``when: always``): a warning saying so, not a pass."""
    with JudgeServer([rate_limited()]) as server:
        _, after = _judge("6-0", server, when="always")
    assert after.verdict == "warn"
    (finding,) = after.findings
    assert (finding.code, finding.severity) == ("F-EVIDENCE-GRADER_NOT_EVALUATED", "warn")
    assert "not evaluated (rate_limited)" in finding.explanation
    assert _outcome(after)[0] == "insufficient_evidence"


def test_sampling_picks_the_same_runs_every_time() -> None:
    """``when: sampled`` picks by a hash of rule and run: reproducible, about the fraction."""
    from tracejudge.graders.apply import picked
    from tracejudge.graders.spec import GraderSpec

    spec = GraderSpec.from_params(
        {
            "model": "m",
            "when": "sampled",
            "fraction": 0.25,
            "properties": [{"id": "a", "question": "q"}],
        }
    )
    blank = Verdict("t", "r", "pass", {})
    first = [r.run_id for r in _runs().values() if picked(spec, "x", r, blank) is None]
    again = [r.run_id for r in _runs().values() if picked(spec, "x", r, blank) is None]
    assert first == again
    assert 10 <= len(first) <= 40  # 100 runs, a quarter expected


def _write_rules(tmp_path: Path, when: str) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text((AIRLINE / "rules.yaml").read_text("utf-8") + _grader_rule(when), "utf-8")
    return path


def test_eval_says_which_key_is_missing_with_file_and_line(tmp_path: Path) -> None:
    """No key in the environment: exit 2 before judging, naming file, line and rule."""
    rules = _write_rules(tmp_path, "always")
    result = CliRunner().invoke(
        main, ["eval", "--rules", str(rules), str(RUNS)], env={"OPENAI_API_KEY": ""}
    )
    assert result.exit_code == 2
    lines = rules.read_text("utf-8").splitlines()
    check_line = len(lines) - lines[::-1].index("    check:")  # the grader's, 1-based
    n = len(_rules().rules) - 1
    assert result.stderr == (
        f"tracejudge eval: {rules}: line {check_line + 1}: rules[{n}].check (rule "
        "claims-backed): grader model 'judge-1' (openai) needs a key: set the environment "
        "variable OPENAI_API_KEY\n"
    )


def test_eval_runs_graders_and_caches_their_answers(tmp_path: Path) -> None:
    """``eval`` with a key and OPENAI_BASE_URL pointing at the scripted server: the JSON
    verdicts carry the grader's evaluation; a second eval with the same --grader-cache asks
    the model nothing; --no-graders says the rule is not run."""
    rules = _write_rules(tmp_path, "always")
    cache = tmp_path / "answers"
    cite = _runs()["6-0"].steps[-1].span_id
    with JudgeServer([openai_reply(_reply("yes", cite))]) as server:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url}
        args = ["eval", "--rules", str(rules), "--format", "json", "--grader-cache", str(cache)]
        first = CliRunner().invoke(main, [*args, str(RUNS)], env=env)
        asked = len(server.requests)
        second = CliRunner().invoke(main, [*args, str(RUNS)], env=env)
        assert len(server.requests) == asked == 100
    assert first.stdout == second.stdout.replace(
        '"tracejudge.grader.cached": 1', '"tracejudge.grader.cached": 0'
    )
    summary = [line for line in first.stderr.splitlines() if "grader claims-backed" in line]
    (line,) = summary
    assert line.startswith("tracejudge eval: grader claims-backed (openai judge-1, prompt ")
    assert line.endswith(
        "evidence/1): judged 100 of 100 runs (when: always); properties no 0, "
        "insufficient_evidence 99, not_evaluated 0; 0 samples from the cache"
    )
    assert "; 100 samples from the cache" in second.stderr
    verdicts = [json.loads(line) for line in first.stdout.splitlines()]
    by_run = {v["run_id"]: v for v in verdicts}
    (evaluation,) = by_run["6-0"]["evaluations"]
    assert evaluation["tracejudge.grader.properties"] == ["claims_backed=yes"]
    skipped = CliRunner().invoke(main, ["eval", "--rules", str(rules), "--no-graders", str(RUNS)])
    assert "grader rule(s) claims-backed are not run here (not_applicable) (--no-graders)" in (
        skipped.stderr
    )
