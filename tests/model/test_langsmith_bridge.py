"""The LangSmith OTel bridge's spans of a real LangGraph agent, read and judged.

Real parts throughout: tests/support/langsmith_agent.py runs langgraph's prebuilt ReAct
agent on langchain-core with real tools, over a scripted chat model replaying the refund
agent's recorded trajectories, under langsmith's own OTel exporter
(``LANGSMITH_OTEL_ENABLED``/``LANGSMITH_OTEL_ONLY``: offline, no API key) into the real OTel
SDK, and writes the spans as OTLP/JSON; the tests read those files as ``tracejudge eval``
reads a file. Tested on langsmith 0.15.1, langchain-core 1.8.3, langgraph 1.2.24. The agent
runs in a subprocess of its own: the bridge is switched on by environment variables
langsmith caches and exports through the global tracer provider, state that must not
reach the other tests (tracejudge's LangChain integration's among them).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.guards import PROCESS_S
from tests.support.refund_trajectories import judge, recorded
from tracejudge.model import Run, build_runs, load_traces
from tracejudge.model.run import ModelCall, ToolCall

ROOT = Path(__file__).resolve().parents[2]
MODEL = "gpt-4o-mini"


@pytest.fixture(scope="module")
def run_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Run]:
    """The agent's runs, one per variant (the agent runs once for the module)."""
    out = tmp_path_factory.mktemp("langsmith")
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.langsmith_agent", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    def one(variant: str) -> Run:
        [spans] = load_traces(out / f"{variant}.json").values()
        [run] = build_runs(spans)
        return run

    return one


def test_tool_runs_are_executions_with_arguments_and_results(run_of: Callable[[str], Run]) -> None:
    """Each LangChain tool run (``langsmith.span.kind`` ``tool``) is one execution: the
    arguments from ``gen_ai.prompt``, the result from the ``ToolMessage`` in
    ``gen_ai.completion``'s ``output``, the call id, status OK."""
    story = recorded("healthy")
    run = run_of("healthy")
    tools = [s for s in run.steps if isinstance(s, ToolCall)]
    assert [(t.name, t.call_id, t.arguments, t.result, t.status) for t in tools] == [
        (s.name, s.call_id, s.arguments, s.result, "ok") for s in story.steps
    ]
    assert all(t.arguments_is_json and not t.inferred for t in tools)


def test_llm_runs_are_model_calls_with_langchain_messages(run_of: Callable[[str], Run]) -> None:
    """Each chat-model run is a model call: the conversation from the ``dumpd`` messages
    in ``gen_ai.prompt``, the reply and its tool calls from the ``LLMResult`` in
    ``gen_ai.completion`` (joined to the executions by call id), model and usage."""
    story = recorded("healthy")
    run = run_of("healthy")
    models = [s for s in run.steps if isinstance(s, ModelCall)]
    assert len(models) == len(story.steps) + 1
    first = models[0]
    assert (first.operation, first.request_model, first.input_tokens) == ("chat", MODEL, 300)
    assert first.input_messages == [
        {"role": "system", "parts": [{"type": "text", "content": story.system}]},
        {"role": "user", "parts": [{"type": "text", "content": story.request}]},
    ]
    assert [r.call_id for m in models for r in m.requested_tool_calls] == [
        s.call_id for s in story.steps
    ]
    # the last call saw each tool's answer as a tool message
    last_input = models[-1].input_messages or []
    responses = [
        p["id"] for m in last_input for p in m["parts"] if p["type"] == "tool_call_response"
    ]
    assert responses == [s.call_id for s in story.steps]
    assert run.final_answer == story.answer
    assert run.user_id == story.user_id
    assert not [n for n in run.notes if n.code in ("not_executed", "inferred_call")]


def test_a_handled_tool_error_is_a_failed_execution(run_of: Callable[[str], Run]) -> None:
    """A tool error LangChain handles (``handle_tool_error``) ends the run OK with a
    ``ToolMessage`` whose status is ``error``: that execution failed."""
    run = run_of("tool_error")
    [email] = [s for s in run.steps if isinstance(s, ToolCall) and s.name == "send_email"]
    assert (email.status, email.result) == ("error", "smtp unavailable")


@pytest.mark.parametrize(
    ("variant", "verdict", "failing"),
    [("healthy", "pass", set()), ("silent_failure", "fail", {"refund-claim-needs-refund"})],
)
def test_refund_rules_judge_langgraph_like_the_plain_agent(
    run_of: Callable[[str], Run], variant: str, verdict: str, failing: set[str]
) -> None:
    """The plain-SDK agent's verdicts: the healthy run passes, the run that claims a refund
    but never called ``refund_api.create`` fails on the claim."""
    got, failed = judge(run_of(variant))
    assert got == verdict, failed
    assert failing <= failed
    if verdict == "pass":
        assert failed == set()
