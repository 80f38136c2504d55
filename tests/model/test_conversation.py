"""The conversation of a run, reconstructed from model calls that each re-send the history.

Spans come from the real OTel SDK (``Recorder``) and go through the real decoder, as in the
other builder tests; the refund traces under examples/ were recorded from the real OpenAI
SDK instrumented by tracejudge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.model.model_helpers import Recorder, recorder
from tracejudge import semconv as sc
from tracejudge.model import Run, ToolCall, build_runs, load_traces, spans_from_sdk
from tracejudge.model.conversation import merge_conversations, turns_of

REPO = Path(__file__).resolve().parents[2]


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": call_id, "name": name, "arguments": args}],
    }


def _result(call_id: str, response: Any, role: str = "tool") -> dict[str, Any]:
    return {
        "role": role,
        "parts": [{"type": "tool_call_response", "id": call_id, "response": response}],
    }


def _chat(rec: Recorder, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> None:
    with rec.tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attribute(sc.GEN_AI_OPERATION_NAME, "chat")
        span.set_attribute(sc.GEN_AI_INPUT_MESSAGES, json.dumps(inputs))
        span.set_attribute(sc.GEN_AI_OUTPUT_MESSAGES, json.dumps(outputs))


def _tool(rec: Recorder, name: str, call_id: str, args: dict[str, Any], result: Any) -> None:
    with rec.tracer.start_as_current_span(f"execute_tool {name}") as span:
        span.set_attribute(sc.GEN_AI_OPERATION_NAME, "execute_tool")
        span.set_attribute(sc.GEN_AI_TOOL_NAME, name)
        span.set_attribute(sc.GEN_AI_TOOL_CALL_ID, call_id)
        span.set_attribute(sc.GEN_AI_TOOL_CALL_ARGUMENTS, json.dumps(args))
        span.set_attribute(sc.GEN_AI_TOOL_CALL_RESULT, json.dumps(result))


def _run(rec: Recorder) -> Run:
    runs = build_runs(spans_from_sdk(rec.spans()))
    assert len(runs) == 1
    turns_of(runs[0])  # builds the conversation (and each call's request_turn)
    return runs[0]


def _cancel_conversation(rec: Recorder, *, history: str = "full") -> None:
    """An agent that proposes, hears "yes" twice (two different questions), and cancels."""
    sys_msg = _text("system", "You are an airline agent.")
    u1 = _text("user", "Cancel reservation R1 please")
    a1 = _text("assistant", "Cancel R1? Please confirm (yes).")
    u2 = _text("user", "yes")
    a2 = _text("assistant", "Also cancel the hotel?")
    u3 = _text("user", "yes")
    a3 = _call("c1", "cancel_reservation", {"reservation_id": "R1"})
    r3 = _result("c1", {"status": "cancelled"})
    a4 = _text("assistant", "R1 has been cancelled.")
    with rec.tracer.start_as_current_span("invoke_agent airline") as agent:
        agent.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
        agent.set_attribute(sc.GEN_AI_AGENT_NAME, "airline")
        _chat(rec, [sys_msg, u1], [a1])
        _chat(rec, [sys_msg, u1, a1, u2], [a2])
        _chat(rec, [sys_msg, u1, a1, u2, a2, u3], [a3])
        _tool(rec, "cancel_reservation", "c1", {"reservation_id": "R1"}, {"status": "cancelled"})
        if history == "full":
            _chat(rec, [sys_msg, u1, a1, u2, a2, u3, a3, r3], [a4])
        else:  # a framework that keeps only the last messages of the history
            _chat(rec, [sys_msg, u3, a3, r3], [a4])


def test_each_message_once_in_order_with_the_step_that_showed_it() -> None:
    with recorder() as rec:
        _cancel_conversation(rec)
        run = _run(rec)
    roles = [(t.role, t.text) for t in turns_of(run)]
    assert roles == [
        ("system", "You are an airline agent."),
        ("user", "Cancel reservation R1 please"),
        ("assistant", "Cancel R1? Please confirm (yes)."),
        ("user", "yes"),
        ("assistant", "Also cancel the hotel?"),
        ("user", "yes"),
        ("assistant", None),
        ("tool", None),
        ("assistant", "R1 has been cancelled."),
    ]
    assert [t.index for t in turns_of(run)] == list(range(9))
    # steps: chat0, chat1, chat2, tool3, chat4
    assert [t.step_index for t in turns_of(run)] == [0, 0, 0, 1, 1, 2, 2, 4, 4]
    assert turns_of(run)[6].tool_calls[0].name == "cancel_reservation"
    assert turns_of(run)[7].call_id == "c1"
    assert turns_of(run)[7].result == {"status": "cancelled"}
    call = run.steps[3]
    assert isinstance(call, ToolCall)
    assert call.request_turn == 6
    assert [t.text for t in [t for t in turns_of(run) if t.role == "user"]] == [
        "Cancel reservation R1 please",
        "yes",
        "yes",
    ]


def test_a_trimmed_history_still_yields_each_message_once() -> None:
    with recorder() as rec:
        _cancel_conversation(rec, history="trimmed")
        run = _run(rec)
    assert [t.role for t in turns_of(run)] == [
        "system", "user", "assistant", "user", "assistant", "user", "assistant", "tool",
        "assistant",
    ]  # fmt: skip


def test_a_repeated_yes_in_delta_inputs_is_a_new_turn() -> None:
    """Each model call carries only the messages new since the last call (some
    orchestrators do): the second "yes" is a new turn. Before: it matched the first "yes"
    by content and was dropped, so the cancel rested on the answer to another question."""
    sys_msg = _text("system", "You are an airline agent.")
    with recorder() as rec:
        with rec.tracer.start_as_current_span("invoke_agent airline") as agent:
            agent.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
            _chat(rec, [sys_msg, _text("user", "Cancel R1")], [_text("assistant", "R1?")])
            _chat(rec, [sys_msg, _text("user", "yes")], [_text("assistant", "And the hotel?")])
            _chat(rec, [_text("user", "yes")], [_call("c1", "cancel_reservation", {"id": "R1"})])
            _tool(rec, "cancel_reservation", "c1", {"id": "R1"}, {"status": "cancelled"})
            _chat(rec, [_result("c1", {"status": "cancelled"})], [_text("assistant", "Done.")])
        run = _run(rec)
    assert [(t.role, t.text) for t in turns_of(run)] == [
        ("system", "You are an airline agent."),
        ("user", "Cancel R1"),
        ("assistant", "R1?"),
        ("user", "yes"),
        ("assistant", "And the hotel?"),
        ("user", "yes"),
        ("assistant", None),
        ("tool", None),
        ("assistant", "Done."),
    ]
    call = run.steps[3]
    assert isinstance(call, ToolCall)
    assert call.request_turn == 6


def test_an_assistant_message_in_json_is_read_as_its_text() -> None:
    """Some orchestrators answer in JSON; the text inside, escapes decoded, is the turn's
    text (before: the raw document, where ``\\n12 Elm St`` hid the address from checks)."""
    from tracejudge.engine import Engine, load_rules_text

    u1 = _text("user", "Change my address")
    a1 = _text(
        "assistant",
        json.dumps({"action": "respond", "message": "Ship to:\n12 Elm St. Proceed?"}),
    )
    u2 = _text("user", "yes")
    args = {"address1": "12 Elm St"}
    a2 = _call("c1", "modify_address", args)
    with recorder() as rec:
        with rec.tracer.start_as_current_span("invoke_agent shop") as agent:
            agent.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
            _chat(rec, [u1], [a1])
            _chat(rec, [u1, a1, u2], [a2])
            _tool(rec, "modify_address", "c1", args, {"ok": True})
        run = _run(rec)
    assert turns_of(run)[1].text == "respond\nShip to:\n12 Elm St. Proceed?"
    rules = load_rules_text(
        json.dumps(
            {
                "version": 1,
                "tools": {"modify_address": {"kind": "mutate"}},
                "rules": [
                    {
                        "id": "address-listed",
                        "layer": "policy",
                        "check": {
                            "type": "user_confirmation",
                            "tools": ["modify_address"],
                            "mention_arguments": ["address1"],
                        },
                    }
                ],
            }
        )
    )
    assert Engine(rules).judge(run).verdict == "pass"


def test_tool_results_inside_user_messages_are_tool_turns() -> None:
    """Anthropic sends tool results in ``user`` messages; they are not the user speaking."""
    with recorder() as rec:
        ask = _text("user", "Refund A1")
        req = _call("t1", "refund", {"order": "A1"})
        res = _result("t1", "ok", role="user")
        with rec.tracer.start_as_current_span("invoke_agent a") as agent:
            agent.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
            _chat(rec, [ask], [req])
            _chat(rec, [ask, req, res], [_text("assistant", "Refunded.")])
        run = _run(rec)
    assert [t.role for t in turns_of(run)] == ["user", "assistant", "tool", "assistant"]
    assert [t.text for t in [t for t in turns_of(run) if t.role == "user"]] == ["Refund A1"]


def test_repeated_call_ids_pair_in_order() -> None:
    """Real transcripts reuse a call id inside one run; each execution takes the earliest
    request not yet taken."""
    with recorder() as rec:
        ask = _text("user", "look up both")
        q1 = _call("dup", "lookup", {"id": 1})
        q2 = _call("dup", "lookup", {"id": 2})
        with rec.tracer.start_as_current_span("invoke_agent a") as agent:
            agent.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
            _chat(rec, [ask], [q1])
            _tool(rec, "lookup", "dup", {"id": 1}, {"n": 1})
            _chat(rec, [ask, q1, _result("dup", {"n": 1})], [q2])
            _tool(rec, "lookup", "dup", {"id": 2}, {"n": 2})
        run = _run(rec)
    assert [c.request_turn for c in run.tool_calls] == [1, 3]


def test_the_agent_spans_own_answer_is_the_last_turn() -> None:
    with recorder() as rec:
        with rec.tracer.start_as_current_span("invoke_agent a") as agent:
            agent.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
            agent.set_attribute(
                sc.GEN_AI_OUTPUT_MESSAGES, json.dumps([_text("assistant", "Done: R1 cancelled.")])
            )
            _chat(rec, [_text("user", "cancel R1")], [_text("assistant", "draft")])
        run = _run(rec)
    assert [(t.role, t.text, t.step_index) for t in turns_of(run)] == [
        ("user", "cancel R1", 0),
        ("assistant", "draft", 0),
        ("assistant", "Done: R1 cancelled.", 1),
    ]


def test_runs_of_one_conversation_across_traces_merge() -> None:
    """One trace per user turn (as many frameworks emit), joined by gen_ai.conversation.id."""
    runs: list[Run] = []
    u1 = _text("user", "cancel R1")
    a1 = _text("assistant", "Confirm cancelling R1?")
    u2 = _text("user", "yes")
    a2 = _call("c9", "cancel_reservation", {"reservation_id": "R1"})
    for inputs, outputs in (([u1], [a1]), ([u1, a1, u2], [a2])):
        with recorder() as rec:
            with rec.tracer.start_as_current_span("invoke_agent a") as agent:
                agent.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
                agent.set_attribute(sc.GEN_AI_CONVERSATION_ID, "conv-7")
                _chat(rec, inputs, outputs)
                if outputs == [a2]:
                    _tool(rec, "cancel_reservation", "c9", {"reservation_id": "R1"}, "ok")
            runs.extend(build_runs(spans_from_sdk(rec.spans())))
    assert len(runs) == 2
    assert runs[0].trace_id != runs[1].trace_id
    merged = merge_conversations(runs)
    assert len(merged) == 1
    run = merged[0]
    assert run.conversation_id == "conv-7"
    assert [t.role for t in turns_of(run)] == ["user", "assistant", "user", "assistant"]
    assert run.tool_calls[0].request_turn == 3
    assert [n.code for n in run.notes if n.code == "merged_conversation"] == ["merged_conversation"]


def test_real_instrumented_refund_trace() -> None:
    """A trace recorded from the real OpenAI SDK under tracejudge.instrument()."""
    traces = load_traces(REPO / "examples/refund/traces/healthy.json")
    (run,) = build_runs(next(iter(traces.values())))
    turns_of(run)
    assert [t.role for t in turns_of(run)][:3] == ["system", "user", "assistant"]
    assert turns_of(run)[-1].role == "assistant"
    assert "refund" in (turns_of(run)[-1].text or "").lower()
    assert all(c.request_turn is not None for c in run.tool_calls)
    requested = [
        turns_of(run)[c.request_turn].tool_calls[0].name
        for c in run.tool_calls
        if c.request_turn is not None
    ]
    assert requested == [c.name for c in run.tool_calls]
