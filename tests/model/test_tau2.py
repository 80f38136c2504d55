"""tau2-bench results files read directly: simulations become runs, bad input is named.

The files here are invented, tau2-shaped (``tasks``, ``simulations``; tool calls
``{id, name, arguments}``; results carrying the call id as ``id``), small enough to read.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tracejudge.cli import main
from tracejudge.engine import Engine, load_rules_text
from tracejudge.model.conversation import turns_of
from tracejudge.report.loading import load_runs

RULES = """
version: 1
tools:
  get_order_details: {kind: lookup}
  cancel_pending_order: {kind: mutate}
rules:
  - id: cancelled-happened
    layer: outcome
    check: {type: completion_claims, map: {cancelled: [cancel_pending_order]}}
"""


def _sim(
    sim_id: str, task_id: str, *, cancel_result: str = '{"status": "cancelled"}'
) -> dict[str, Any]:
    call = {
        "id": "call_1",
        "name": "cancel_pending_order",
        "arguments": {"order_id": "#W1", "reason": "no longer needed"},
    }
    return {
        "id": sim_id,
        "task_id": task_id,
        "trial": 0,
        "start_time": "2026-02-17T23:26:18.055450",
        "reward_info": {"reward": 1.0},
        "messages": [
            {"role": "assistant", "content": "Hi! How can I help you today?"},
            {"role": "user", "content": "Cancel #W1, no longer needed."},
            {"role": "assistant", "content": "Cancel order #W1 (no longer needed)? yes/no"},
            {"role": "user", "content": "yes"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "id": "call_1", "content": cancel_result, "error": False},
            {"role": "assistant", "content": "Your order #W1 has been cancelled."},
        ],
    }  # fmt: skip


def _doc(*sims: Any, tasks: tuple[str, ...] = ("1",)) -> dict[str, Any]:
    return {
        "info": {"environment_info": {"domain_name": "retail"}, "agent_info": {"llm": "gpt-4o"}},
        "tasks": [{"id": t, "evaluation_criteria": {"actions": []}} for t in tasks],
        "simulations": list(sims),
    }


def _write(path: Path, doc: Any) -> Path:
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


def test_a_results_file_is_one_run_per_simulation(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.json.gz", _doc(_sim("s-a", "1"), _sim("s-b", "1")))
    loaded = load_runs([path])
    assert loaded.errors == []
    assert loaded.summaries == [
        f"{path}: tau2-bench results: 2 of 2 simulation(s) read, 0 skipped; 1 task(s)"
    ]
    assert sorted(r.run_id or "" for r in loaded.runs) == ["s-a", "s-b"]
    run = loaded.runs[0]
    turns = turns_of(run)  # the conversation, built on demand, places the calls' requests
    assert run.case_id == "tau2-retail-1"
    (call,) = run.tool_calls
    assert call.name == "cancel_pending_order"  # paired with its call by the result's id
    assert call.arguments == {"order_id": "#W1", "reason": "no longer needed"}
    assert call.status == "ok"
    assert call.request_turn == 4
    assert [t.role for t in turns][:4] == ["assistant", "user", "assistant", "user"]
    assert run.notes == [n for n in run.notes if n.code != "source_problem"]


def test_a_result_starting_with_error_is_a_failed_execution(tmp_path: Path) -> None:
    sim = _sim("s-a", "1", cancel_result="Error: Non-pending order cannot be cancelled")
    loaded = load_runs([_write(tmp_path / "r.json.gz", _doc(sim))])
    (call,) = loaded.runs[0].tool_calls
    assert call.status == "error"
    verdict = Engine(load_rules_text(RULES)).judge(loaded.runs[0])
    assert verdict.verdict == "fail"  # "has been cancelled" with the only cancel failed
    assert verdict.primary is not None
    assert verdict.primary.code == "F-OUTPUT-UNSUPPORTED_CLAIM"


def test_a_simulation_whose_task_is_missing_warns_naming_it(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.json.gz", _doc(_sim("s-a", "1"), _sim("s-lost", "99")))
    loaded = load_runs([path])
    assert "1 simulation(s) name a task the file does not have" in loaded.summaries[0]
    engine = Engine(load_rules_text(RULES))
    verdicts = {r.run_id: engine.judge(r) for r in loaded.runs}
    assert verdicts["s-a"].verdict == "pass"
    lost = verdicts["s-lost"]
    assert lost.verdict == "warn"  # never a silent pass
    (finding,) = [f for f in lost.findings if f.code == "F-EVIDENCE-SOURCE_PROBLEM"]
    assert "simulation s-lost (simulations[1]) names task '99'" in finding.explanation


def test_a_tool_result_with_no_call_warns_with_its_position(tmp_path: Path) -> None:
    sim = _sim("s-a", "1")
    sim["messages"].insert(2, {"role": "tool", "id": "call_zz", "content": "{}"})
    loaded = load_runs([_write(tmp_path / "r.json.gz", _doc(sim))])
    verdict = Engine(load_rules_text(RULES)).judge(loaded.runs[0])
    (finding,) = [f for f in verdict.findings if f.code == "F-EVIDENCE-SOURCE_PROBLEM"]
    assert (
        "simulation s-a (simulations[0]) messages[2]: tool result (call id 'call_zz') "
        "answers no tool call" in finding.explanation
    )
    assert verdict.verdict == "warn"


def test_a_bad_simulation_is_named_and_the_others_are_read(tmp_path: Path) -> None:
    bad = _sim("s-bad", "1")
    bad["messages"][3] = {"role": "customer", "content": "yes"}
    path = _write(tmp_path / "r.json.gz", _doc(_sim("s-a", "1"), bad, "not a simulation"))
    loaded = load_runs([path])
    assert [r.run_id for r in loaded.runs] == ["s-a"]
    assert loaded.errors == [
        f"skipped {path}: simulations[1] (id s-bad).messages[3].role: unknown role 'customer'",
        f"skipped {path}: simulations[2]: a simulation must be an object, got str",
    ]
    assert loaded.summaries == [
        f"{path}: tau2-bench results: 1 of 3 simulation(s) read, 2 skipped; 1 task(s)"
    ]


def test_an_unparsable_results_file_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(_doc(_sim("s-a", "1")))[:300])
    loaded = load_runs([path])
    assert loaded.runs == []
    (error,) = loaded.errors
    assert error.startswith(f"malformed trace file {path}: ")
    assert "ends early at line 1 column 301" in error


def test_eval_prints_what_it_read(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    path = _write(tmp_path / "r.json.gz", _doc(_sim("s-a", "1"), _sim("s-lost", "99")))
    result = CliRunner().invoke(main, ["eval", "--rules", str(rules), "-q", str(path)])
    assert result.exit_code == 0, result.output  # a warn is not a failure
    assert (
        f"tracejudge eval: {path}: tau2-bench results: 2 of 2 simulation(s) read, 0 skipped; "
        "1 task(s); 1 simulation(s) name a task the file does not have"
    ) in result.stderr
    assert "2 run(s)" in result.stdout


def test_the_simulated_users_own_tool_calls_are_not_the_agents(tmp_path: Path) -> None:
    """tau2's telecom user runs tools on their own device: those calls and results
    (``requestor: user``) are not steps of the agent, and not orphan results either."""
    sim = _sim("s-a", "1")
    user_call = {"id": "u1", "name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}
    sim["messages"][1:1] = [
        {"role": "user", "content": None, "tool_calls": [user_call]},
        {"role": "tool", "id": "u1", "content": "Airplane mode off", "requestor": "user"},
    ]
    loaded = load_runs([_write(tmp_path / "r.json.gz", _doc(sim))])
    (run,) = loaded.runs
    assert [c.name for c in run.tool_calls] == ["cancel_pending_order"]
    verdict = Engine(load_rules_text(RULES)).judge(run)
    assert verdict.verdict == "pass"
