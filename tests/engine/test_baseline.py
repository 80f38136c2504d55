"""Baselines: recording a reviewed run and diffing later runs of the case against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.engine_runs import (
    REFUND_TOOLS,
    codes,
    judge_one,
    make_run,
    refund_run,
    rules_text,
    span,
    tool,
)
from tracejudge.engine import BaselineError, BaselineStore, load_rules_text
from tracejudge.engine.context import ToolMeta
from tracejudge.model.run import ToolCall

CHECK = {
    "type": "baseline",
    "arguments": {
        "refund_api.create": {"amount": {"tolerance": 0.01}, "idempotency_key": "ignore"}
    },
}


@pytest.fixture
def store(tmp_path: Path) -> BaselineStore:
    """A store holding the healthy refund run."""
    s = BaselineStore(tmp_path)
    s.record(refund_run("healthy"), _tools())
    return s


def _tools() -> dict[str, ToolMeta]:
    return dict(load_rules_text(rules_text({"type": "no_loop"}, tools=REFUND_TOOLS)).tools)


def test_recorded_file_is_reviewable(store: BaselineStore, tmp_path: Path) -> None:
    """One JSON file per case, with the tool sequence, kinds and the terminal action."""
    doc = json.loads((tmp_path / "dup-charge-1.json").read_text())
    assert doc["case_id"] == "dup-charge-1"
    assert doc["recorded_from_trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    assert [c["tool"] for c in doc["calls"]] == [
        "lookup_order",
        "check_policy",
        "refund_api.create",
        "send_email",
    ]
    assert doc["calls"][2]["kind"] == "mutate"
    assert doc["terminal_action"] == "refund_api.create"


def test_same_run_passes(store: BaselineStore) -> None:
    """A run identical to its baseline has nothing to report."""
    assert judge_one(CHECK, refund_run("healthy"), baselines=store).verdict == "pass"


def test_tolerance_and_drift(store: BaselineStore) -> None:
    """Within the relative tolerance passes; half the amount is a soft drift at the call."""
    run = refund_run("healthy")
    refund = run.steps[5]
    assert isinstance(refund, ToolCall)
    refund.arguments = {**refund.arguments, "amount": 40.2, "idempotency_key": "z"}
    assert judge_one(CHECK, run, baselines=store).verdict == "pass"
    v = judge_one(CHECK, refund_run("half_amount"), baselines=store)
    assert v.verdict == "warn"
    assert codes(v) == ["F-BASELINE-ARG_DRIFT"]
    assert v.primary.span_ids == (span(5),)


def test_missing_call_and_terminal_action_fail(store: BaselineStore) -> None:
    """Dropping the refund is a hard failure twice over: a missing call and a new terminal."""
    v = judge_one(CHECK, refund_run("no_refund"), baselines=store)
    assert v.verdict == "fail"
    assert set(codes(v)) == {"F-BASELINE-MISSING_CALL", "F-BASELINE-TERMINAL_ACTION"}


def test_unexpected_call_is_soft(store: BaselineStore) -> None:
    """An extra call is worth a look, not a failed run."""
    run = refund_run("healthy")
    run.steps.insert(2, tool("lookup_order", {"customer_id": "u1"}, {"orders": []}))
    run = make_run(run.steps, run.final_answer, case_id="dup-charge-1", user_id="u1")
    v = judge_one(CHECK, run, baselines=store)
    assert v.verdict == "warn"
    assert codes(v) == ["F-BASELINE-UNEXPECTED_CALL"]


def test_no_baseline_is_insufficient_evidence(store: BaselineStore) -> None:
    """A store that lacks the case: never a silent pass; no case id, or no store given at
    all (nobody asked for the comparison): not applicable, so a healthy run is ``pass``."""
    other = make_run([], case_id="other-case")
    assert codes(judge_one(CHECK, other, baselines=store)) == ["F-EVIDENCE-NO_BASELINE"]
    no_case = judge_one(CHECK, make_run([]), baselines=store)
    assert no_case.outcomes[0].result == "not_applicable"
    assert no_case.layers["trajectory"] == "not_applicable"
    no_store = judge_one(CHECK, refund_run("healthy"))
    assert codes(no_store) == []
    assert no_store.verdict == "pass"
    assert [o.result for o in no_store.outcomes] == ["not_applicable"]


def test_unsafe_case_id_and_corrupt_file(tmp_path: Path) -> None:
    """Case ids cannot escape the directory; a corrupt file is reported, not crashed on."""
    store = BaselineStore(tmp_path)
    with pytest.raises(BaselineError):
        store.record(make_run([], case_id="../etc/passwd"))
    (tmp_path / "bad.json").write_text("{not json")
    v = judge_one(CHECK, make_run([], case_id="bad"), baselines=store)
    assert codes(v) == ["F-EVIDENCE-NO_BASELINE"]
    assert "bad.json" in v.primary.explanation
