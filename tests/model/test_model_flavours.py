"""Every instrumentation flavour is judged by the same Run: older GenAI events,
OpenInference and OpenLLMetry spans (attributes set exactly as those libraries set them,
on real SDK spans) yield the same steps, tool calls and answers."""

from __future__ import annotations

import json

from tests.model.model_helpers import recorder
from tracejudge import semconv as sc
from tracejudge.model import ModelCall, ToolCall, build_runs, spans_from_sdk

ORDER_ARGS = '{"order": "A1"}'


class TestOlderGenAiEvents:
    def test_message_events_and_choice_events(self) -> None:
        """gen_ai.system + per-message events (body in gen_ai.event.content) become the
        same canonical messages, including tool calls and tool results."""
        tool_calls = [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "refund", "arguments": ORDER_ARGS},
            }
        ]
        with recorder() as rec:
            with rec.tracer.start_as_current_span("chat gpt-4") as span:
                span.set_attribute(sc.GEN_AI_OPERATION_NAME, "chat")
                span.set_attribute(sc.FOREIGN_GEN_AI_SYSTEM, "openai")
                span.set_attribute(sc.FOREIGN_GEN_AI_USAGE_PROMPT_TOKENS, 11)
                span.add_event(
                    sc.FOREIGN_GEN_AI_USER_MESSAGE,
                    {sc.FOREIGN_GEN_AI_EVENT_CONTENT: json.dumps({"content": "refund A1"})},
                )
                span.add_event(
                    sc.FOREIGN_GEN_AI_ASSISTANT_MESSAGE,
                    {sc.FOREIGN_GEN_AI_EVENT_CONTENT: json.dumps({"tool_calls": tool_calls})},
                )
                span.add_event(
                    sc.FOREIGN_GEN_AI_TOOL_MESSAGE,
                    {sc.FOREIGN_GEN_AI_EVENT_CONTENT: json.dumps({"content": "done", "id": "c1"})},
                )
                span.add_event(
                    sc.FOREIGN_GEN_AI_CHOICE,
                    {
                        sc.FOREIGN_GEN_AI_EVENT_CONTENT: json.dumps(
                            {"index": 0, "finish_reason": "stop", "message": {"content": "Done!"}}
                        )
                    },
                )
            (run,) = build_runs(spans_from_sdk(rec.spans()))
        (call,) = run.model_calls
        assert call.provider == "openai"
        assert call.input_tokens == 11
        assert call.input_messages is not None
        assert [m["role"] for m in call.input_messages] == ["user", "assistant", "tool"]
        assert call.input_messages[1]["parts"][0] == {
            "type": "tool_call",
            "id": "c1",
            "name": "refund",
            "arguments": {"order": "A1"},
        }
        assert call.input_messages[2]["parts"][0]["response"] == "done"
        assert call.finish_reasons == ("stop",)
        assert run.final_answer == "Done!"

    def test_inference_details_event(self) -> None:
        """Content moved to the gen_ai.client.inference.operation.details event is read
        when the span itself has no message attributes."""
        out = [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}]
        with recorder() as rec:
            with rec.tracer.start_as_current_span("chat m") as span:
                span.set_attribute(sc.GEN_AI_OPERATION_NAME, "chat")
                span.add_event(
                    sc.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS,
                    {sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(out)},
                )
            (run,) = build_runs(spans_from_sdk(rec.spans()))
        assert run.final_answer == "hello"


class TestOpenInference:
    def test_agent_llm_and_tool_spans(self) -> None:
        """AGENT/LLM/TOOL kinds, flattened llm.*_messages with tool calls, tool spans with
        input.value/output.value and the agent's output.value as the final answer."""
        out = sc.FOREIGN_LLM_OUTPUT_MESSAGES + ".0."
        inp = sc.FOREIGN_LLM_INPUT_MESSAGES + ".0."
        calls = out + sc.FOREIGN_MESSAGE_TOOL_CALLS + ".0."
        with recorder() as rec:
            with rec.tracer.start_as_current_span("Agent") as agent:
                agent.set_attribute(sc.FOREIGN_OPENINFERENCE_SPAN_KIND, "AGENT")
                agent.set_attribute(sc.FOREIGN_AGENT_NAME, "helpdesk")
                with rec.tracer.start_as_current_span("ChatCompletion") as llm:
                    llm.set_attribute(sc.FOREIGN_OPENINFERENCE_SPAN_KIND, "LLM")
                    llm.set_attribute(sc.FOREIGN_LLM_MODEL_NAME, "gpt-4o")
                    llm.set_attribute(sc.FOREIGN_LLM_PROVIDER, "openai")
                    llm.set_attribute(sc.FOREIGN_LLM_TOKEN_COUNT_PROMPT, 50)
                    llm.set_attribute(inp + sc.FOREIGN_MESSAGE_ROLE, "user")
                    llm.set_attribute(inp + sc.FOREIGN_MESSAGE_CONTENT, "refund A1")
                    llm.set_attribute(out + sc.FOREIGN_MESSAGE_ROLE, "assistant")
                    llm.set_attribute(calls + sc.FOREIGN_TOOL_CALL_ID, "c1")
                    llm.set_attribute(calls + sc.FOREIGN_TOOL_CALL_FUNCTION_NAME, "refund")
                    llm.set_attribute(calls + sc.FOREIGN_TOOL_CALL_FUNCTION_ARGUMENTS, ORDER_ARGS)
                with rec.tracer.start_as_current_span("refund") as tool:
                    tool.set_attribute(sc.FOREIGN_OPENINFERENCE_SPAN_KIND, "TOOL")
                    tool.set_attribute(sc.FOREIGN_TOOL_NAME, "refund")
                    tool.set_attribute(sc.FOREIGN_INPUT_VALUE, ORDER_ARGS)
                    tool.set_attribute(sc.FOREIGN_OUTPUT_VALUE, '{"refund_id": "R1"}')
                agent.set_attribute(sc.FOREIGN_OUTPUT_VALUE, "Refunded.")
            (run,) = build_runs(spans_from_sdk(rec.spans()))
        assert run.agent_name == "helpdesk"
        llm_call, tool_call = run.steps
        assert isinstance(llm_call, ModelCall)
        assert isinstance(tool_call, ToolCall)
        assert (llm_call.provider, llm_call.request_model, llm_call.input_tokens) == (
            "openai",
            "gpt-4o",
            50,
        )
        assert llm_call.input_messages == [
            {"role": "user", "parts": [{"type": "text", "content": "refund A1"}]}
        ]
        (req,) = llm_call.requested_tool_calls
        assert (req.call_id, req.name, req.arguments) == ("c1", "refund", {"order": "A1"})
        assert (tool_call.name, tool_call.arguments, tool_call.result) == (
            "refund",
            {"order": "A1"},
            {"refund_id": "R1"},
        )
        assert run.final_answer == "Refunded."


class TestOpenLlmetry:
    def test_workflow_agent_task_tool_and_indexed_prompts(self) -> None:
        """traceloop.span.kind spans, gen_ai.prompt.N / gen_ai.completion.N.tool_calls.M
        indexed attributes and decorator input {"args", "kwargs"} are understood."""
        completion = sc.FOREIGN_GEN_AI_COMPLETION + ".0."
        with recorder() as rec:
            with rec.tracer.start_as_current_span("support.workflow") as wf:
                wf.set_attribute(sc.FOREIGN_TRACELOOP_SPAN_KIND, "workflow")
                with rec.tracer.start_as_current_span("support.agent") as agent:
                    agent.set_attribute(sc.FOREIGN_TRACELOOP_SPAN_KIND, "agent")
                    agent.set_attribute(sc.FOREIGN_TRACELOOP_ENTITY_NAME, "support")
                    with rec.tracer.start_as_current_span("openai.chat") as llm:
                        llm.set_attribute(sc.FOREIGN_LLM_REQUEST_TYPE, "chat")
                        llm.set_attribute(sc.FOREIGN_GEN_AI_SYSTEM, "openai")
                        llm.set_attribute(sc.FOREIGN_GEN_AI_PROMPT + ".0.role", "user")
                        llm.set_attribute(sc.FOREIGN_GEN_AI_PROMPT + ".0.content", "refund A1")
                        llm.set_attribute(completion + "role", "assistant")
                        llm.set_attribute(completion + "finish_reason", "tool_calls")
                        llm.set_attribute(completion + "tool_calls.0.id", "c1")
                        llm.set_attribute(completion + "tool_calls.0.name", "refund")
                        llm.set_attribute(completion + "tool_calls.0.arguments", ORDER_ARGS)
                    with rec.tracer.start_as_current_span("refund.tool") as tool:
                        tool.set_attribute(sc.FOREIGN_TRACELOOP_SPAN_KIND, "tool")
                        tool.set_attribute(sc.FOREIGN_TRACELOOP_ENTITY_NAME, "refund")
                        tool.set_attribute(
                            sc.FOREIGN_TRACELOOP_ENTITY_INPUT,
                            json.dumps({"args": [], "kwargs": {"order": "A1"}}),
                        )
                        tool.set_attribute(sc.FOREIGN_TRACELOOP_ENTITY_OUTPUT, '"ok"')
                    agent.set_attribute(sc.FOREIGN_TRACELOOP_ENTITY_OUTPUT, "All set.")
            (run,) = build_runs(spans_from_sdk(rec.spans()))
        assert run.agent_name == "support"
        llm_call, tool_call = run.steps
        assert isinstance(llm_call, ModelCall)
        assert isinstance(tool_call, ToolCall)
        assert llm_call.operation == "chat"
        assert llm_call.provider == "openai"
        assert llm_call.finish_reasons == ("tool_calls",)
        assert llm_call.requested_tool_calls[0].arguments == {"order": "A1"}
        assert (tool_call.name, tool_call.arguments, tool_call.result) == (
            "refund",
            {"order": "A1"},
            "ok",
        )
        assert run.final_answer == "All set."
        codes = [n.code for n in run.notes]
        assert "outside_runs" not in codes  # the workflow span is a container, not a stray
        (matched,) = [n for n in run.notes if n.code == "matched_by_name"]
        assert matched.span_ids[0] == tool_call.span_id
        assert "matched to the requested call c1 by name" in matched.text
