"""Chat transcripts and tau-bench records become the runs a live agent's spans would give."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracejudge.model import OtlpDecodeError, build_runs, load_spans, load_traces
from tracejudge.model.conversation import turns_of
from tracejudge.model.transcripts import TranscriptMeta, spans_from_chat, tau_clock

REPO = Path(__file__).resolve().parents[2]
TAU = REPO / "examples/airline/tau-bench-dev/gpt-4o-airline.dev.json"


def _transcript() -> list[dict[str, Any]]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "cancel", "arguments": '{"r": "R1"}'},
    }
    return [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "cancel R1"},
        {"role": "assistant", "content": "Cancel R1? (yes/no)"},
        {"role": "user", "content": "yes"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "cancel", "content": "Error: too late"},
        {"role": "assistant", "content": "Sorry, R1 could not be cancelled."},
    ]


def test_a_chat_transcript_is_a_run_with_its_conversation() -> None:
    meta = TranscriptMeta(case_id="case-1", tool_error_prefixes=("Error:",))
    (run,) = build_runs(spans_from_chat(_transcript(), meta))
    turns_of(run)
    assert run.case_id == "case-1"
    assert [s.kind for s in run.steps] == ["model", "model", "tool", "model"]
    (call,) = run.tool_calls
    assert call.name == "cancel"
    assert call.arguments == {"r": "R1"}
    assert call.status == "error"
    assert call.result == "Error: too late"
    assert call.request_turn == 4
    assert [t.role for t in turns_of(run)] == [
        "system", "user", "assistant", "user", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert run.final_answer == "Sorry, R1 could not be cancelled."
    assert turns_of(run)[3].step_index == 1  # "yes" first shown to the second model call


def test_json_lines_of_conversations_load_as_runs(tmp_path: Path) -> None:
    lines = [
        json.dumps({"messages": _transcript(), "case_id": f"c{i}", "run_id": f"r{i}"})
        for i in range(3)
    ]
    path = tmp_path / "chats.jsonl"
    path.write_text("\n".join(lines) + "\n")
    traces = load_traces(path)
    runs = [r for spans in traces.values() for r in build_runs(spans)]
    assert sorted(r.case_id or "" for r in runs) == ["c0", "c1", "c2"]
    assert len({r.trace_id for r in runs}) == 3


def test_a_malformed_transcript_names_the_position(tmp_path: Path) -> None:
    bad = _transcript()
    bad[3] = {"role": "customer", "content": "yes"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"messages": bad}))
    with pytest.raises(OtlpDecodeError) as err:
        load_spans(path)
    assert "messages[3].role" in str(err.value)
    assert "customer" in str(err.value)


def test_a_tool_result_without_a_call_is_kept() -> None:
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "zz", "name": "lookup", "content": "{}"},
        {"role": "assistant", "content": "hello"},
    ]
    (run,) = build_runs(spans_from_chat(msgs, TranscriptMeta()))
    turns_of(run)
    (call,) = run.tool_calls
    assert call.name == "lookup"
    assert call.request_turn is None


def test_tau_clock_reads_the_policy_time() -> None:
    ns = tau_clock("# Airline Agent Policy\n\nThe current time is 2024-05-15 15:00:00 EST.")
    assert ns == 1715803200 * 1_000_000_000  # 2024-05-15T20:00:00Z
    assert tau_clock("no clock here") is None


def test_the_tau_bench_dev_split_loads_as_100_runs() -> None:
    traces = load_traces(TAU)
    runs = [r for spans in traces.values() for r in build_runs(spans)]
    assert len(runs) == 100
    assert {r.case_id for r in runs} == {f"tau-airline-{t}" for t in range(0, 50, 2)}
    assert all(r.user_id for r in runs)
    failed = [c for r in runs for c in r.tool_calls if c.status == "error"]
    assert failed
    assert all(str(c.result).startswith("Error:") for c in failed)
    # every tool execution in these transcripts was requested by an assistant turn
    for r in runs:
        turns_of(r)
    assert all(c.request_turn is not None for r in runs for c in r.tool_calls)


def test_an_orphan_tool_result_is_an_evidence_warning() -> None:
    """A result that answers no requested call is never silently accepted as evidence by
    a rule that reads the conversation (the conversation is built when one does)."""
    from tracejudge.engine import Engine, load_rules_text

    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "One moment."},
        {"role": "tool", "tool_call_id": "zz", "name": "lookup", "content": "{}"},
        {"role": "assistant", "content": "hello"},
    ]
    (run,) = build_runs(spans_from_chat(msgs, TranscriptMeta()))
    rules = load_rules_text(
        "version: 1\nrules:\n  - id: r\n    layer: outcome\n"
        "    check: {type: completion_claims, map: {cancelled: [lookup]}}\n"
    )
    verdict = Engine(rules).judge(run)
    assert [n.code for n in run.notes if n.code == "orphan_tool_result"] == ["orphan_tool_result"]
    assert verdict.verdict == "warn"
    assert "F-EVIDENCE-ORPHAN_TOOL_RESULT" in [f.code for f in verdict.findings]
