"""Hand-made conversations for the checks that read turns (built directly, no spans).

A script is a list of events, in the order they happened:

- ``user("...")``: the user speaks;
- ``say("...", call, ...)``: one model call; its assistant turn has that text (or none)
  and requests the given tool calls, which then run, each followed by its tool turn.

The run follows the model's semantics (``Turn.step_index``, ``ToolCall.request_turn``):
an assistant turn's step is the model call that produced it; a user or tool turn's step is
the first model call whose input shows it (``len(steps)`` when no later call exists).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from tests.engine.engine_runs import STEP_NS, T0, make_run, model, span
from tracejudge.model.run import RequestedToolCall, Run, Step, ToolCall, Turn


@dataclass(slots=True)
class User:
    """The user says ``text``."""

    text: str


@dataclass(slots=True)
class Say:
    """One model call: its text (None: tool calls only) and the calls it requests."""

    text: str | None
    calls: list[ToolCall] = field(default_factory=list)


def user(text: str) -> User:
    """A user turn."""
    return User(text)


def say(text: str | None, *calls: ToolCall) -> Say:
    """An assistant turn (one model call) requesting ``calls``, which then run."""
    return Say(text, list(calls))


def convo(script: list[User | Say], **kw: Any) -> Run:
    """The run of ``script``; the final answer is the last assistant text (unless given)."""
    steps: list[Step] = []
    turns: list[Turn] = []
    waiting: list[int] = []  # user/tool turns (indexes) not yet shown to a model call
    answer: str | None = None
    answer_step: int | None = None
    for event in script:
        if isinstance(event, User):
            waiting.append(len(turns))
            turns.append(Turn(index=len(turns), role="user", text=event.text))
            continue
        m = len(steps)
        steps.append(model())
        for k in waiting:
            turns[k] = replace(turns[k], step_index=m, span_id=span(m), time_ns=T0 + m * STEP_NS)
        waiting = []
        calls = event.calls
        requested = tuple(
            RequestedToolCall(f"call_{m}_{n}", c.name, c.arguments) for n, c in enumerate(calls)
        )
        said = Turn(
            index=len(turns),
            role="assistant",
            text=event.text,
            tool_calls=requested,
            step_index=m,
            span_id=span(m),
            time_ns=T0 + (m + 1) * STEP_NS,
        )
        turns.append(said)
        if event.text:
            answer, answer_step = event.text, m
        for n, given in enumerate(calls):
            call = replace(given, call_id=f"call_{m}_{n}", request_turn=said.index)
            steps.append(call)
            waiting.append(len(turns))
            turns.append(
                Turn(
                    index=len(turns),
                    role="tool",
                    call_id=call.call_id,
                    tool_name=call.name,
                    result=call.result,
                )
            )
    for k in waiting:
        turns[k] = replace(turns[k], step_index=len(steps), span_id="")
    fields: dict[str, Any] = {
        "final_answer_step_index": answer_step,
        "turns": turns,
        "conversation_built": True,  # the turns are given, not rebuilt from model messages
    }
    fields.update(kw)
    final = fields.pop("answer", answer)
    if "final_answer_span_id" not in fields and final is not None and answer_step is not None:
        fields["final_answer_span_id"] = span(answer_step)
    return make_run(steps, final, **fields)
