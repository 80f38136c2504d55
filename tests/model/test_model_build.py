"""The run builder on GenAI-convention traces made by the real OTel SDK."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.trace import Status, StatusCode

from tests.model.model_helpers import Recorder, recorder
from tracejudge import semconv as sc
from tracejudge.model import (
    ModelCall,
    Note,
    SpanRecord,
    ToolCall,
    build_runs,
    spans_from_proto_request,
    spans_from_sdk,
)


def _msgs(*messages: dict[str, Any]) -> str:
    return json.dumps(list(messages))


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": call_id, "name": name, "arguments": args}],
    }


def _result(call_id: str, response: Any) -> dict[str, Any]:
    return {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": call_id, "response": response}],
    }


def _chat(rec: Recorder, inputs: str, outputs: str, **extra: Any) -> None:
    with rec.tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attribute(sc.GEN_AI_OPERATION_NAME, "chat")
        span.set_attribute(sc.GEN_AI_PROVIDER_NAME, "openai")
        span.set_attribute(sc.GEN_AI_REQUEST_MODEL, "gpt-4o")
        span.set_attribute(sc.GEN_AI_USAGE_INPUT_TOKENS, 100)
        span.set_attribute(sc.GEN_AI_USAGE_OUTPUT_TOKENS, 20)
        span.set_attribute(sc.GEN_AI_INPUT_MESSAGES, inputs)
        span.set_attribute(sc.GEN_AI_OUTPUT_MESSAGES, outputs)
        for key, value in extra.items():
            span.set_attribute(key, value)


def _refund_trace(rec: Recorder, *, agent_output: bool = True) -> None:
    ask = _text("user", "Refund order A1 please")
    with rec.tracer.start_as_current_span("invoke_agent refunds") as agent:
        agent.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
        agent.set_attribute(sc.GEN_AI_AGENT_NAME, "refunds")
        agent.set_attribute(sc.GEN_AI_AGENT_ID, "asst_1")
        agent.set_attribute(sc.GEN_AI_AGENT_VERSION, "3")
        agent.set_attribute(sc.TRACEJUDGE_RUN_ID, "run-1")
        agent.set_attribute(sc.TRACEJUDGE_CASE_ID, "case-A1")
        agent.set_attribute(sc.TRACEJUDGE_EXPERIMENT_ID, "exp-9")
        agent.set_attribute(sc.TRACEJUDGE_VARIANT_ID, "v2")
        agent.set_attribute(sc.USER_ID, "u-7")
        agent.set_attribute(sc.TRACEJUDGE_TENANT_ID, "t-1")
        _chat(rec, _msgs(ask), _msgs(_call("c1", "refund", {"order": "A1"})))
        with rec.tracer.start_as_current_span("execute_tool refund") as tool:
            tool.set_attribute(sc.GEN_AI_OPERATION_NAME, "execute_tool")
            tool.set_attribute(sc.GEN_AI_TOOL_NAME, "refund")
            tool.set_attribute(sc.GEN_AI_TOOL_CALL_ID, "c1")
            tool.set_attribute(sc.GEN_AI_TOOL_CALL_ARGUMENTS, '{"order": "A1"}')
            tool.set_attribute(sc.GEN_AI_TOOL_CALL_RESULT, '{"refund_id": "R9"}')
            tool.set_attribute(sc.TRACEJUDGE_TOOL_EFFECT, "write")
            tool.set_attribute(sc.TRACEJUDGE_TOOL_IDEMPOTENCY_KEY, "idem-1")
            tool.set_attribute(sc.TRACEJUDGE_APPROVAL_GRANTED, True)
        _chat(
            rec,
            _msgs(ask, _call("c1", "refund", {"order": "A1"}), _result("c1", {"refund_id": "R9"})),
            _msgs(_text("assistant", "Refund R9 is on its way.")),
            **{sc.GEN_AI_RESPONSE_FINISH_REASONS: ["stop"]},
        )
        if agent_output:
            agent.set_attribute(
                sc.GEN_AI_OUTPUT_MESSAGES, _msgs(_text("assistant", "Your refund is on its way."))
            )


class TestGenAi:
    def test_agent_run_steps_identity_and_answer(self) -> None:
        """A real refund agent trace becomes one run with identity, ordered steps, the
        requested tool call, the tool's parsed arguments/result and the agent's answer."""
        with recorder() as rec:
            _refund_trace(rec)
            (run,) = build_runs(spans_from_sdk(rec.spans()))
        assert (run.agent_name, run.agent_id, run.agent_version) == ("refunds", "asst_1", "3")
        assert (run.run_id, run.case_id, run.experiment_id, run.variant_id) == (
            "run-1",
            "case-A1",
            "exp-9",
            "v2",
        )
        assert (run.user_id, run.tenant_id) == ("u-7", "t-1")
        assert [s.kind for s in run.steps] == ["model", "tool", "model"]
        first, tool, last = run.steps
        assert isinstance(first, ModelCall)
        assert isinstance(tool, ToolCall)
        assert isinstance(last, ModelCall)
        assert first.requested_tool_calls[0].call_id == "c1"
        assert first.requested_tool_calls[0].arguments == {"order": "A1"}
        assert (first.provider, first.input_tokens, first.output_tokens) == ("openai", 100, 20)
        assert last.finish_reasons == ("stop",)
        assert tool.arguments == {"order": "A1"}
        assert tool.result == {"refund_id": "R9"}
        assert (tool.effect, tool.idempotency_key, tool.approval_granted) == (
            "write",
            "idem-1",
            True,
        )
        assert tool.inferred is False
        assert run.final_answer == "Your refund is on its way."
        assert run.final_answer_span_id == run.root_span_id
        assert run.final_answer_step_index == 2  # the last chat call wrote the text
        (source,) = [n for n in run.notes if n.code == "final_answer"]
        assert source.span_ids == (run.root_span_id,)
        assert source.text.startswith("final answer: gen_ai.output.messages of agent span")
        assert len(run.spans) == 4
        assert run.duration_ns > 0

    def test_final_answer_falls_back_to_last_model_call(self) -> None:
        """Without agent output, the last model call's text is the answer (noted as such)."""
        with recorder() as rec:
            _refund_trace(rec, agent_output=False)
            (run,) = build_runs(spans_from_sdk(rec.spans()))
        assert run.final_answer == "Refund R9 is on its way."
        assert run.final_answer_span_id == run.model_calls[-1].span_id
        assert run.final_answer_step_index == 2
        assert Note(
            "final_answer",
            (run.final_answer_span_id,),
            f"final answer: output of the last model call {run.final_answer_span_id}",
        ) in (run.notes)

    def test_same_runs_from_the_otlp_wire(self) -> None:
        """Building from OTLP protobuf bytes gives the same run as from SDK spans, so the
        collector and the offline tools judge identically."""
        with recorder() as rec:
            _refund_trace(rec)
            direct = build_runs(spans_from_sdk(rec.spans()))
            wire = build_runs(spans_from_proto_request(rec.request().SerializeToString()))
        assert wire == direct

    def test_sub_agents_belong_to_the_outer_run_and_roots_split_runs(self) -> None:
        """A nested invoke_agent is part of the outer run; two top-level agents are two
        runs; spans outside both are listed in the notes, not silently dropped."""
        with recorder() as rec:
            with rec.tracer.start_as_current_span("workflow"):
                for name in ("a", "b"):
                    with rec.tracer.start_as_current_span(f"invoke_agent {name}") as agent:
                        agent.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
                        agent.set_attribute(sc.GEN_AI_AGENT_NAME, name)
                        with rec.tracer.start_as_current_span("invoke_agent helper") as sub:
                            sub.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
                            sub.set_attribute(sc.GEN_AI_AGENT_NAME, "helper")
                            _chat(rec, _msgs(), _msgs(_text("assistant", f"from {name}")))
                _chat(rec, _msgs(), _msgs(_text("assistant", "stray")))
            spans = spans_from_sdk(rec.spans())
            runs = build_runs(spans)
        assert [r.agent_name for r in runs] == ["a", "b"]
        assert [r.final_answer for r in runs] == ["from a", "from b"]
        assert all(len(r.model_calls) == 1 for r in runs)
        in_runs = {s.span_id for r in runs for s in r.spans}
        stray = [s.span_id for s in spans if s.span_id not in in_runs and s.name.startswith("chat")]
        for r in runs:
            (note,) = [n for n in r.notes if n.code == "unjudged_steps"]
            assert "outside every agent run" in note.text
            assert note.span_ids == tuple(stray)  # the unjudged model call, not the workflow

    def test_whole_trace_is_one_run_without_agent_spans(self) -> None:
        """A plain chat-and-tool loop with no agent span is judged as one run."""
        with recorder() as rec:
            with rec.tracer.start_as_current_span("handler"):
                _chat(rec, _msgs(), _msgs(_text("assistant", "hi")))
            (run,) = build_runs(spans_from_sdk(rec.spans()))
        assert run.spans[0].name == "handler"
        assert run.root_span_id == run.spans[0].span_id
        assert run.final_answer == "hi"


class TestToolEvidence:
    def test_inferred_tool_execution_is_placed_before_the_next_call(self) -> None:
        """An uninstrumented loop: the model asked for c1, nothing recorded executing it, but
        the next request carried its result, so a ToolCall(inferred=True) appears between."""
        ask = _text("user", "cancel B2")
        with recorder() as rec:
            with rec.tracer.start_as_current_span("loop"):
                _chat(rec, _msgs(ask), _msgs(_call("c1", "cancel", {"order": "B2"})))
                _chat(
                    rec,
                    _msgs(ask, _call("c1", "cancel", {"order": "B2"}), _result("c1", '{"ok": 1}')),
                    _msgs(_call("c2", "notify", {"to": "x"})),
                )
            (run,) = build_runs(spans_from_sdk(rec.spans()))
        assert [s.kind for s in run.steps] == ["model", "tool", "model"]
        inferred = run.steps[1]
        assert isinstance(inferred, ToolCall)
        assert inferred.inferred is True
        assert inferred.span_id == run.steps[2].span_id
        assert (inferred.name, inferred.call_id) == ("cancel", "c1")
        assert inferred.arguments == {"order": "B2"}
        assert inferred.result == {"ok": 1}
        (missing,) = [n for n in run.notes if n.code == "not_executed"]
        assert missing.span_ids == (run.steps[2].span_id,)
        assert "c2" in missing.text
        assert "no execution or result was seen" in missing.text

    def test_observed_execution_is_not_inferred_twice(self) -> None:
        """When an execute_tool span carries the call id, no inferred copy is added."""
        with recorder() as rec:
            _refund_trace(rec)
            (run,) = build_runs(spans_from_sdk(rec.spans()))
        assert [t.inferred for t in run.tool_calls] == [False]

    def test_tool_status_error_flags_and_non_json_arguments(self) -> None:
        """Span status ERROR is an error with its error.type; a result that says it failed
        counts as an error too (noted); non-JSON arguments stay text (noted)."""
        with recorder() as rec, rec.tracer.start_as_current_span("loop"):
            with rec.tracer.start_as_current_span("execute_tool a") as span:
                span.set_attribute(sc.GEN_AI_OPERATION_NAME, "execute_tool")
                span.set_attribute(sc.GEN_AI_TOOL_NAME, "a")
                span.set_attribute(sc.ERROR_TYPE, "TimeoutError")
                span.set_status(Status(StatusCode.ERROR, "slow"))
            with rec.tracer.start_as_current_span("execute_tool b") as span:
                span.set_attribute(sc.GEN_AI_OPERATION_NAME, "execute_tool")
                span.set_attribute(sc.GEN_AI_TOOL_CALL_ARGUMENTS, "order=A1")
                span.set_attribute(sc.GEN_AI_TOOL_CALL_RESULT, '{"isError": true}')
                span.set_status(Status(StatusCode.OK))
        (run,) = build_runs(spans_from_sdk(rec.spans()))
        a, b = run.tool_calls
        assert (a.status, a.error_type) == ("error", "TimeoutError")
        assert (b.name, b.status, b.error_type) == ("b", "error", "tool_error")
        assert b.arguments == "order=A1"
        assert b.arguments_is_json is False
        by_code = {n.code: n for n in run.notes}
        assert by_code["result_error"].span_ids == (b.span_id,)
        assert "result reports failure (isError)" in by_code["result_error"].text
        assert by_code["args_not_json"].span_ids == (b.span_id,)
        assert "arguments are not JSON" in by_code["args_not_json"].text


def _rec(sid: str, parent: str | None, start: int, end: int, **attrs: Any) -> SpanRecord:
    return SpanRecord(
        trace_id="a" * 32,
        span_id=sid,
        parent_span_id=parent,
        name=f"span {sid[-1]}",
        start_ns=start,
        end_ns=end,
        attributes=dict(attrs),
    )


_TOOL = {sc.GEN_AI_OPERATION_NAME: "execute_tool"}


class TestBadInput:
    """Hand-built SpanRecords: these shapes (loops, duplicate ids) cannot be produced by
    the SDK, and ordering ties need controlled ids and times."""

    def test_order_is_start_then_end_then_span_id(self) -> None:
        """Steps are ordered by start, ties by end, then span id, whatever the input order."""
        spans = [
            _rec("000000000000000c", None, 10, 30, **_TOOL),
            _rec("000000000000000b", None, 10, 20, **_TOOL),
            _rec("000000000000000a", None, 10, 30, **_TOOL),
            _rec("0000000000000009", None, 5, 50, **_TOOL),
        ]
        for order in (spans, list(reversed(spans))):
            (run,) = build_runs(order)
            assert [s.span_id[-1] for s in run.steps] == ["9", "b", "a", "c"]

    def test_cycles_orphans_duplicates_and_unfinished_spans(self) -> None:
        """Broken traces never crash: each defect is repaired one documented way and noted."""
        spans = [
            _rec("0000000000000001", "0000000000000002", 1, 9, **_TOOL),
            _rec("0000000000000002", "0000000000000001", 2, 8, **_TOOL),
            _rec("0000000000000003", "00000000000000ff", 3, 0, **_TOOL),
            _rec("0000000000000003", None, 99, 100),
            _rec("0000000000000004", "0000000000000004", 4, 5),
        ]
        (run,) = build_runs(spans)
        assert len(run.steps) == 3
        got = sorted((n.code, n.span_ids) for n in run.notes if n.code != "final_answer")
        assert got == [
            ("duplicate_span", ("0000000000000003",)),
            ("orphan_span", ("0000000000000003",)),  # the orphan, not its missing parent
            ("parent_cycle", ("0000000000000001", "0000000000000002")),  # cut span first
            ("parent_cycle", ("0000000000000004",)),
            ("several_roots", ("0000000000000001", "0000000000000003", "0000000000000004")),
            ("unfinished_span", ("0000000000000003",)),
        ]
        notes = " ".join(n.text for n in run.notes)
        assert "cut above span 0000000000000001" in notes
        assert "parent 00000000000000ff is missing" in notes
        assert "appears 2 times; kept the first copy" in notes
        assert "cut above span 0000000000000004" in notes
        assert run.spans[2].start_ns == 3  # the first copy of the duplicate was kept

    def test_defects_outside_agent_runs_are_still_reported(self) -> None:
        """A duplicated container span above the agent is not part of the run, but its
        defect is noted on the run rather than dropped."""
        agent = {sc.GEN_AI_OPERATION_NAME: "invoke_agent"}
        spans = [
            _rec("0000000000000001", None, 1, 9),
            _rec("0000000000000001", None, 1, 9),
            _rec("0000000000000002", "0000000000000001", 2, 8, **agent),
        ]
        (run,) = build_runs(spans)
        assert run.root_span_id == "0000000000000002"
        assert [s.span_id for s in run.spans] == ["0000000000000002"]
        (dup,) = [n for n in run.notes if n.code == "duplicate_span"]
        assert dup.span_ids == ("0000000000000001",)
        assert "appears 2 times" in dup.text

    def test_missing_attributes_and_garbage_messages(self) -> None:
        """Model spans with no usable content yield calls with None fields and a note."""
        spans = [
            _rec(
                "0000000000000001",
                None,
                1,
                2,
                **{
                    sc.GEN_AI_OPERATION_NAME: "chat",
                    sc.GEN_AI_OUTPUT_MESSAGES: "not json",
                    sc.GEN_AI_USAGE_INPUT_TOKENS: "many",
                },
            )
        ]
        (run,) = build_runs(spans)
        (call,) = run.model_calls
        assert call.output_messages is None
        assert call.input_tokens is None
        assert run.final_answer is None
        (bad,) = [n for n in run.notes if n.code == "bad_messages"]
        assert bad.span_ids == ("0000000000000001",)
        assert "is not a JSON list of messages" in bad.text

    def test_spans_of_several_traces_and_empty_input(self) -> None:
        """Mixed traces are built trace by trace; no spans, no runs."""
        one = _rec("0000000000000001", None, 1, 2)
        other = SpanRecord(
            trace_id="b" * 32, span_id="0000000000000002", parent_span_id=None, name="x"
        )
        runs = build_runs([one, other])
        assert [r.trace_id for r in runs] == ["a" * 32, "b" * 32]
        assert build_runs([]) == []
