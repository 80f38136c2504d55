"""``cases from-tau2``: tau2-bench tasks as cases whose argument matching keeps the reward's
meaning (records on their expected keys, lists the tools store sorted as multisets), and
expected actions the benchmark's own environment rejects marked, not silently expected.

The tasks and simulations are invented, tau2-shaped."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tracejudge.cli import main
from tracejudge.engine import Engine, load_rules_text
from tracejudge.engine.cases import load_cases_text
from tracejudge.engine.tau2 import action_matches, argument_match, cases_from_tau2
from tracejudge.engine.tau_bench import dump_jsonl
from tracejudge.report.loading import load_runs

RETURN = "return_delivered_order_items"
TOOLS_ONLY = """
version: 1
tools:
  get_order_details: {kind: lookup}
  return_delivered_order_items: {kind: mutate}
  exchange_delivered_order_items: {kind: mutate}
  modify_pending_order_items: {kind: mutate}
  book_reservation: {kind: mutate}
  transfer_to_human_agents: {kind: notify}
rules: []
"""


def _action(name: str, **arguments: Any) -> dict[str, Any]:
    return {"action_id": "x", "requestor": "assistant", "name": name, "arguments": arguments}


def _task(task_id: str, *actions: dict[str, Any], info: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "id": task_id,
        "user_scenario": {"instructions": {"reason_for_call": f"task {task_id}"}},
        "evaluation_criteria": {"actions": list(actions), "communicate_info": list(info)},
    }


def _sim(sim_id: str, task_id: str, calls: list[tuple[str, dict[str, Any], str]]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    for k, (name, args, result) in enumerate(calls):
        cid = f"c{k}"
        messages.append(
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": cid, "name": name, "arguments": args}]}
        )  # fmt: skip
        messages.append({"role": "tool", "id": cid, "content": result})
    messages.append({"role": "assistant", "content": "Done: the refund is 12.50 dollars."})
    return {"id": sim_id, "task_id": task_id, "trial": 0, "messages": messages}


def _doc(tasks: list[dict[str, Any]], sims: list[dict[str, Any]]) -> dict[str, Any]:
    return {"info": {"environment_info": {"domain_name": "retail"}}, "tasks": tasks,
            "simulations": sims}  # fmt: skip


def test_item_ids_a_return_stores_sorted_match_in_any_order_but_not_another_multiset() -> None:
    match = argument_match(RETURN, {"order_id": "#W1", "item_ids": ["1", "2"]})
    assert match == {"item_ids": "unordered"}
    want = {"order_id": "#W1", "item_ids": ["1", "2", "2"]}
    assert action_matches({"order_id": "#W1", "item_ids": ["2", "1", "2"]}, want, match)
    assert not action_matches({"order_id": "#W1", "item_ids": ["1", "1", "2"]}, want, match)
    assert not action_matches({"order_id": "#W1", "item_ids": ["1", "2"]}, want, match)
    assert not action_matches({"order_id": "#W2", "item_ids": ["2", "1", "2"]}, want, match)


def test_an_item_modification_keeps_its_pairs_in_order() -> None:
    """modify_pending_order_items applies its pairs in order (the order can change the price
    it stores), so its lists are compared exactly."""
    args = {"order_id": "#W1", "item_ids": ["1", "2"], "new_item_ids": ["3", "4"]}
    match = argument_match("modify_pending_order_items", args)
    assert match == {}
    swapped = {"order_id": "#W1", "item_ids": ["2", "1"], "new_item_ids": ["4", "3"]}
    assert not action_matches(swapped, args, match)


def test_records_compare_on_the_expected_keys_in_order() -> None:
    want = {"flights": [{"flight_number": "HAT1", "date": "2024-05-20"},
                        {"flight_number": "HAT2", "date": "2024-05-21"}]}  # fmt: skip
    match = argument_match("book_reservation", want)
    assert match == {"flights": "keys"}
    extra = {"flights": [{"flight_number": "HAT1", "date": "2024-05-20", "price": 120},
                         {"flight_number": "HAT2", "date": "2024-05-21", "price": 80}]}  # fmt: skip
    assert action_matches(extra, want, match)  # the tool reads the listed fields only
    missing = {
        "flights": [{"flight_number": "HAT1"}, {"flight_number": "HAT2", "date": "2024-05-21"}]
    }
    assert not action_matches(missing, want, match)
    reversed_ = {"flights": list(reversed(extra["flights"]))}
    assert not action_matches(reversed_, want, match)
    assert not action_matches({"flights": extra["flights"][:1]}, want, match)


def test_tasks_become_cases_with_writes_notifications_and_information() -> None:
    task = _task(
        "7",
        _action("get_order_details", order_id="#W1"),
        _action(RETURN, order_id="#W1", item_ids=["2", "1"], payment_method_id="gift_card_1"),
        _action("transfer_to_human_agents", summary="free text"),
        info=("12.50",),
    )
    made = cases_from_tau2([_doc([task], [])])
    assert made.cases == [
        {
            "id": "tau2-retail-7",
            "description": "task 7",
            "expected_actions": [
                {"tool": RETURN,
                 "arguments": {"order_id": "#W1", "item_ids": ["2", "1"],
                               "payment_method_id": "gift_card_1"},
                 "argument_match": {"item_ids": "unordered"}},
                {"tool": "transfer_to_human_agents", "severity": "warn"},
            ],
            "must_communicate": [{"text": "12.50"}],
            "communicate_in": "assistant_messages",
        }
    ]  # fmt: skip
    assert made.marked == []


def test_an_expected_action_the_environment_rejects_is_noted_not_expected() -> None:
    args = {"order_id": "#W1", "item_ids": ["1"], "payment_method_id": "paypal_1"}
    task = _task("12", _action(RETURN, **args), _action("transfer_to_human_agents", summary="s"))
    failed = _sim("s-1", "12", [(RETURN, args, "Error: Payment method should be the original")])
    made = cases_from_tau2([_doc([task], [failed])])
    (case,) = made.cases
    # tau2 skips it when building the expected database: a return like it is unexpected
    assert case["expected_actions"] == [{"tool": "transfer_to_human_agents", "severity": "warn"}]
    (note,) = case["notes"]
    assert note.startswith(
        f"not expected: the task's {RETURN} "
        '{"item_ids": ["1"], "order_id": "#W1", "payment_method_id": "paypal_1"} fails in the '
        "benchmark's environment (simulation s-1 (simulations[0]) messages[2] answered "
        "'Error: Payment method should be the original'"
    )
    assert made.marked == [f"tau2-retail-12 {RETURN}"]
    assert len(load_cases_text(dump_jsonl(made.cases), fmt="jsonl")) == 1
    # a simulation where the same call succeeds shows it does not always fail: kept
    worked = _sim("s-2", "12", [(RETURN, {**args}, '{"status": "return requested"}')])
    again = cases_from_tau2([_doc([task], [failed, worked])])
    assert again.cases[0]["expected_actions"][0]["tool"] == RETURN
    assert "notes" not in again.cases[0]
    assert again.marked == []


def test_a_run_with_the_item_ids_in_another_order_agrees_with_the_reward(tmp_path: Path) -> None:
    args = {"order_id": "#W1", "item_ids": ["1", "2"], "payment_method_id": "paypal_1"}
    task = _task("3", _action(RETURN, **args))
    reordered = {**args, "item_ids": ["2", "1"]}
    other = {**args, "item_ids": ["1", "3"]}
    doc = _doc(
        [task],
        [
            _sim("same", "3", [(RETURN, reordered, "{}")]),
            _sim("wrong", "3", [(RETURN, other, "{}")]),
        ],
    )
    cases = load_cases_text(dump_jsonl(cases_from_tau2([doc]).cases), fmt="jsonl")
    path = tmp_path / "r.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    engine = Engine(load_rules_text(TOOLS_ONLY), cases=cases)
    verdicts = {r.run_id: engine.judge(r) for r in load_runs([path]).runs}
    assert verdicts["same"].verdict == "pass"
    assert verdicts["wrong"].verdict == "fail"
    assert verdicts["wrong"].primary is not None
    assert verdicts["wrong"].primary.code == "F-CASE-WRONG_ARGUMENTS"


def test_the_command_writes_a_loadable_cases_file_and_names_bad_input(tmp_path: Path) -> None:
    good = tmp_path / "r.json.gz"
    task = _task("3", _action(RETURN, order_id="#W1", item_ids=["1"], payment_method_id="p"))
    lost = _sim("s-lost", "99", [])
    good.write_bytes(gzip.compress(json.dumps(_doc([task], [lost])).encode()))
    out = tmp_path / "cases.jsonl"
    result = CliRunner().invoke(main, ["cases", "from-tau2", str(good), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert len(load_cases_text(out.read_text(), fmt="jsonl")) == 1
    assert (
        "warning: file 1: simulation s-lost (simulations[0]) names task '99', which the "
        "file's tasks do not have"
    ) in result.stderr
    assert "read 1 file(s): 1 task(s), 1 simulation(s) (1 naming no task)" in result.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"tasks": [')
    result = CliRunner().invoke(main, ["cases", "from-tau2", str(bad)])
    assert result.exit_code == 2
    assert str(bad) in result.stderr
    notau = tmp_path / "otlp.json"
    notau.write_text('{"resourceSpans": []}')
    result = CliRunner().invoke(main, ["cases", "from-tau2", str(notau)])
    assert result.exit_code == 2
    assert "not a tau2-bench results file" in result.stderr
