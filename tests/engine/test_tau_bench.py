"""tau-bench task records translated into cases, and runs judged against them.

The records are small hand-made ones in the shape of tau-bench's result files
(``{task_id, trial, reward, info: {task: {user_id, actions, instruction, outputs}}}``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.engine.engine_runs import make_run, tool
from tracejudge.engine import Engine, load_cases_text, load_rules_text
from tracejudge.engine.tau_bench import (
    AIRLINE_TOOL_KINDS,
    case_from_task,
    cases_from_tau_bench,
    dump_jsonl,
    tau_kind,
    tools_section,
)
from tracejudge.engine.verdict import Verdict

CANCEL = {"name": "cancel_reservation", "kwargs": {"reservation_id": "EHGLP3"}}
BAGS: dict[str, Any] = {
    "name": "update_reservation_baggages",
    "kwargs": {
        "reservation_id": "EHGLP3",
        "total_baggages": 2,
        "nonfree_baggages": 1,
        "payment_id": "gift_card_1",
    },
}
READS = [
    {"name": "get_user_details", "kwargs": {"user_id": "emma_1"}},
    {"name": "get_reservation_details", "kwargs": {"reservation_id": "EHGLP3"}},
    {"name": "calculate", "kwargs": {"expression": "50 * 1"}},
]


def record(
    task_id: int, actions: list[dict[str, Any]], outputs: list[str] | None = None, trial: int = 0
) -> dict[str, Any]:
    """One tau-bench result record."""
    task = {
        "user_id": "emma_1",
        "actions": actions,
        "instruction": "You are emma_1. You want to cancel EHGLP3.",
        "outputs": outputs or [],
    }
    return {"task_id": task_id, "trial": trial, "reward": 1.0, "info": {"task": task}}


def test_writes_become_exact_unordered_expectations_and_reads_are_dropped() -> None:
    [case] = cases_from_tau_bench([record(4, [*READS, CANCEL, BAGS])])
    assert case["id"] == "tau-airline-4"
    assert case["expected_actions"] == [
        {"tool": "cancel_reservation", "arguments": {"reservation_id": "EHGLP3"}},
        {"tool": "update_reservation_baggages", "arguments": BAGS["kwargs"]},
    ]
    assert "ordered" not in case  # unordered: the final database does not record order
    assert case["description"].startswith("You are emma_1.")
    assert "must_communicate" not in case


def test_a_task_without_writes_expects_none() -> None:
    [case] = cases_from_tau_bench([record(6, READS)])
    assert case["expected_actions"] == []


def test_transfer_to_a_human_is_expected_as_a_warning_by_name_only() -> None:
    transfer = {"name": "transfer_to_human_agents", "kwargs": {"summary": "wants a refund"}}
    [case] = cases_from_tau_bench([record(8, [transfer])])
    assert case["expected_actions"] == [{"tool": "transfer_to_human_agents", "severity": "warn"}]


def test_outputs_must_be_communicated_in_any_assistant_message() -> None:
    [case] = cases_from_tau_bench([record(2, READS, ["23553", "1,000"])])
    assert case["must_communicate"] == [{"text": "23553"}, {"text": "1,000"}]
    assert case["communicate_in"] == "assistant_messages"


def test_the_prefix_is_a_parameter_and_trials_of_a_task_are_one_case() -> None:
    records = [record(2, [CANCEL], trial=t) for t in range(4)] + [record(0, [BAGS])]
    cases = cases_from_tau_bench(records, prefix="tau-retail-")
    assert [c["id"] for c in cases] == ["tau-retail-0", "tau-retail-2"]


def test_trials_that_disagree_are_an_error() -> None:
    with pytest.raises(ValueError, match="record 1: task 2 differs from record 0"):
        cases_from_tau_bench([record(2, [CANCEL]), record(2, [BAGS], trial=1)])


def test_records_without_a_task_are_named() -> None:
    with pytest.raises(ValueError, match=r"record 1: no task_id and info\.task"):
        cases_from_tau_bench([record(2, [CANCEL]), {"task_id": 3, "info": {}}])
    with pytest.raises(ValueError, match=r"task 5: actions\[0\] has no name"):
        case_from_task(5, {"actions": [{"kwargs": {}}]})


def test_kinds_by_table_then_by_name() -> None:
    assert tau_kind("book_reservation") == "write"
    assert tau_kind("search_onestop_flight") == "read"
    assert tau_kind("find_user_id_by_email") == "read"  # retail's look-up
    assert tau_kind("think") == "read"
    assert tau_kind("transfer_to_human_agents", {}) == "notify"
    assert tau_kind("exchange_delivered_order_items") == "write"
    assert len(AIRLINE_TOOL_KINDS) == 14
    section = tools_section()
    assert section["cancel_reservation"] == {"kind": "mutate"}
    assert section["get_user_details"] == {"kind": "lookup"}
    assert section["transfer_to_human_agents"] == {"kind": "notify"}


RULES = json.dumps(
    {
        "version": 1,
        "tools": tools_section(),
        "rules": [{"id": "loops", "layer": "trajectory", "check": {"type": "no_loop"}}],
    }
)


def _judge(case_record: dict[str, Any], steps: list[Any], answer: str) -> Verdict:
    text = dump_jsonl(cases_from_tau_bench([case_record]))
    cases = load_cases_text(text, "tau.jsonl", "jsonl")
    run = make_run(steps, answer, case_id=f"tau-airline-{case_record['task_id']}")
    return Engine(load_rules_text(RULES), cases=cases).judge(run)


def test_translated_cases_judge_runs_as_the_reward_does() -> None:
    """Reward 1 needs the expected writes with exactly their arguments, in any order, and
    nothing else written; reads are free."""
    rec = record(4, [*READS, CANCEL, BAGS], ["refund"])
    look = tool("get_reservation_details", {"reservation_id": "EHGLP3"}, {"status": "ok"})
    cancel = tool("cancel_reservation", {"reservation_id": "EHGLP3"}, {"status": "cancelled"})
    bags = tool("update_reservation_baggages", dict(BAGS["kwargs"]), {"ok": True})
    good = _judge(rec, [look, bags, cancel], "Done, the refund is on its way.")
    assert good.verdict == "pass", good.findings
    wrong = tool("update_reservation_baggages", {**BAGS["kwargs"], "nonfree_baggages": 2}, {})
    bad = _judge(rec, [look, cancel, wrong], "Done, the refund is on its way.")
    assert [f.code for f in bad.findings] == ["F-CASE-WRONG_ARGUMENTS"]
    assert "nonfree_baggages=2, expected 1" in bad.findings[0].explanation
    extra = tool("send_certificate", {"user_id": "emma_1", "amount": 50}, {})
    worse = _judge(rec, [look, cancel, bags, extra], "Done.")
    assert [f.code for f in worse.findings] == [
        "F-CASE-UNEXPECTED_WRITE",
        "F-CASE-MISSING_INFORMATION",
    ]
