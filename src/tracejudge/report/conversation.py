"""A judged run's conversation as the report shows it: turns, tool calls, anchored findings.

The verdict JSON names the spans a finding is about, not a turn. This module joins the
two (independent of how the result is drawn, like ``timeline``):

- a finding on a tool execution's span is anchored at that call, shown under the
  assistant turn that requested it (``ToolCall.request_turn``);
- a finding on a model call's span, at the last assistant turn that call produced (else
  the last turn shown by then);
- a finding on the run's root span or on a span that is no step (a whole-run rule, the
  final answer), at the turn its explanation cites (``(turn N)``), else on the whole run.

An explanation cites a turn as ``(turn N)`` (``Turn.index``) and quotes what it read as
a Python literal (``'yes'``, ``"The total cost..."``, cut with ``...``). Each quote found
in the cited turn's text is a ``Citation``, so the page can highlight that sentence.

Content is shown only where it was captured: a turn without text, a call without
arguments or result, say so instead of showing an empty value. Redacted text is shown as
it is (``[REDACTED]`` stays).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracejudge.model.conversation import turns_of
from tracejudge.model.run import ModelCall, RequestedToolCall, Run, ToolCall, Turn
from tracejudge.report.records import FindingRecord

_TURN_REF = re.compile(r"\(turn (\d+)\)")
_QUOTED = re.compile(r"""(?<![\w])(['"])((?:\\.|(?!\1)[^\\\n])*?)(\1|\.\.\.(?=\W|$))""")
"""A quoted literal as ``repr`` writes it: closed by its quote, or cut with ``...``
(``short()`` cuts the literal and appends ``...``: no closing quote). The shortest match
wins, so a cut quote never runs on to a later apostrophe."""
MIN_QUOTE = 3
"""Shorter quotes (``'a'``) would highlight letters all over a turn."""


@dataclass(slots=True, frozen=True)
class Citation:
    """A quote of a finding found in a turn's text: ``text[start:end]``."""

    turn: int
    start: int
    end: int
    finding: FindingRecord


@dataclass(slots=True, frozen=True)
class CallView:
    """A tool call as one card: what was asked, what ran, what came back.

    ``step`` is the index in ``Run.steps`` of the execution (None: requested, never
    seen to run). ``arguments``/``result`` are None when they were not captured."""

    name: str
    call_id: str | None
    step: int | None
    arguments: Any
    result: Any
    status: str
    duration_ns: int | None
    inferred: bool = False
    findings: tuple[FindingRecord, ...] = ()


@dataclass(slots=True, frozen=True)
class TurnView:
    """One turn with the calls it requested and the findings anchored at it."""

    turn: Turn
    calls: tuple[CallView, ...] = ()
    findings: tuple[FindingRecord, ...] = ()
    status: str | None = None
    """Assistant turns: the status of the model call that produced it."""
    answers: CallView | None = None
    """Tool turns: the card already showing this result (the result is not repeated)."""


@dataclass(slots=True)
class ConversationView:
    """A run's conversation in order, each finding placed once."""

    items: list[TurnView | CallView] = field(default_factory=list)
    """Turns, and tool executions no captured message requested, in the order they happened."""
    run_findings: list[FindingRecord] = field(default_factory=list)
    """Findings with no turn or call to anchor at."""
    citations: dict[int, list[Citation]] = field(default_factory=dict)
    """Turn index -> the quotes of findings found in that turn's text."""


def build_conversation_view(run: Run, findings: Sequence[FindingRecord]) -> ConversationView:
    """The run's conversation with ``findings`` anchored (see the module docstring); empty
    when no message was captured."""
    turns = turns_of(run)
    if not turns:
        return ConversationView(run_findings=list(findings))
    step_of = {s.span_id: i for i, s in reversed(list(enumerate(run.steps)))}
    on_call: dict[int, list[FindingRecord]] = {}
    on_turn: dict[int, list[FindingRecord]] = {}
    view = ConversationView()
    produced = _produced_turns(turns)
    for f in findings:
        place = _place(f, run, step_of, produced, turns)
        if place is None:
            view.run_findings.append(f)
        elif place[0] == "call":
            on_call.setdefault(place[1], []).append(f)
        else:
            on_turn.setdefault(place[1], []).append(f)
        _cite(f, turns, view.citations)
    calls_of = _calls_by_turn(run, on_call)
    shown: dict[str, CallView] = {}
    placed_steps: set[int] = set()
    for turn in turns:
        calls = calls_of.get(turn.index, ())
        for c in calls:
            if c.step is not None:
                placed_steps.add(c.step)
            if c.call_id:
                shown.setdefault(c.call_id, c)
        status = None
        if turn.role == "assistant" and turn.step_index < len(run.steps):
            status = run.steps[turn.step_index].status
        answers = shown.pop(turn.call_id, None) if turn.role == "tool" and turn.call_id else None
        view.items.append(
            TurnView(turn, calls, tuple(on_turn.get(turn.index, ())), status, answers)
        )
    _insert_unrequested(view, run, placed_steps, on_call)
    return view


def _produced_turns(turns: Sequence[Turn]) -> dict[int, int]:
    """Model call step index -> the last assistant turn it produced."""
    return {t.step_index: t.index for t in turns if t.role == "assistant"}


def _place(
    f: FindingRecord,
    run: Run,
    step_of: dict[str, int],
    produced: dict[int, int],
    turns: Sequence[Turn],
) -> tuple[str, int] | None:
    """``("call", step)`` or ``("turn", index)`` where ``f`` happened; None: the whole run."""
    for sid in f.span_ids:
        index = step_of.get(sid)
        if index is None:
            continue
        candidates = [i for i, s in enumerate(run.steps) if s.span_id == sid]
        tools = [i for i in candidates if isinstance(run.steps[i], ToolCall)]
        named = [i for i in tools if _tool(run, i).name in f.explanation]
        if named or (tools and not any(isinstance(run.steps[i], ModelCall) for i in candidates)):
            return ("call", (named or tools)[0])
        if index in produced:
            return ("turn", produced[index])
        before = [t.index for t in turns if t.step_index <= index]
        if before:
            return ("turn", before[-1])
    refs = [int(m.group(1)) for m in _TURN_REF.finditer(f.explanation)]
    for ref in refs:
        if 0 <= ref < len(turns):
            return ("turn", ref)
    return None


def _tool(run: Run, index: int) -> ToolCall:
    step = run.steps[index]
    assert isinstance(step, ToolCall)
    return step


def _calls_by_turn(
    run: Run, on_call: dict[int, list[FindingRecord]]
) -> dict[int, tuple[CallView, ...]]:
    """Assistant turn index -> a card per requested call, each paired with its execution
    (the step whose ``request_turn`` is the turn: by call id, else by name in order)."""
    executions: dict[int, list[int]] = {}
    for i, step in enumerate(run.steps):
        if isinstance(step, ToolCall) and step.request_turn is not None:
            executions.setdefault(step.request_turn, []).append(i)
    out: dict[int, tuple[CallView, ...]] = {}
    for turn in run.turns:
        if turn.role != "assistant" or not (turn.tool_calls or turn.index in executions):
            continue
        free = list(executions.get(turn.index, ()))
        cards: list[CallView] = []
        for req in turn.tool_calls:
            match = None
            if req.call_id is not None:
                match = next((i for i in free if _tool(run, i).call_id == req.call_id), None)
            if match is None:
                match = next((i for i in free if _tool(run, i).name == req.name), None)
            if match is not None:
                free.remove(match)
            cards.append(_card(run, match, req, on_call))
        cards.extend(_card(run, i, None, on_call) for i in free)
        out[turn.index] = tuple(cards)
    return out


def _card(
    run: Run,
    step: int | None,
    req: RequestedToolCall | None,
    on_call: dict[int, list[FindingRecord]],
) -> CallView:
    if step is None:
        assert req is not None
        return CallView(req.name, req.call_id, None, req.arguments, None, "unset", None)
    call = _tool(run, step)
    arguments = call.arguments if call.arguments is not None else (req and req.arguments)
    duration = call.end_ns - call.start_ns if call.end_ns >= call.start_ns > 0 else None
    return CallView(
        call.name,
        call.call_id or (req.call_id if req else None),
        step,
        arguments,
        call.result,
        call.status,
        None if call.inferred else duration,
        call.inferred,
        tuple(on_call.get(step, ())),
    )


def _insert_unrequested(
    view: ConversationView, run: Run, placed: set[int], on_call: dict[int, list[FindingRecord]]
) -> None:
    """Tool executions no captured message requested, placed before the first turn shown
    after them (by step index)."""
    for i, step in enumerate(run.steps):
        if not isinstance(step, ToolCall) or i in placed:
            continue
        card = _card(run, i, None, on_call)
        at = next(
            (
                k
                for k, item in enumerate(view.items)
                if isinstance(item, TurnView) and item.turn.step_index > i
            ),
            len(view.items),
        )
        view.items.insert(at, card)


def _cite(f: FindingRecord, turns: Sequence[Turn], out: dict[int, list[Citation]]) -> None:
    """Each quote of ``f`` found in a turn its explanation cites (see the module docstring)."""
    refs = {int(m.group(1)) for m in _TURN_REF.finditer(f.explanation)}
    quotes = quotes_in(f.explanation)
    for ref in sorted(refs):
        if not 0 <= ref < len(turns):
            continue
        text = turns[ref].text
        if not text:
            continue
        for quote in quotes:
            start = text.find(quote)
            if start >= 0:
                out.setdefault(ref, []).append(Citation(ref, start, start + len(quote), f))


def quotes_in(explanation: str) -> list[str]:
    """The quoted literals of an explanation, decoded, cut ones without their ``...``;
    quotes shorter than ``MIN_QUOTE`` characters are left out."""
    out: list[str] = []
    for m in _QUOTED.finditer(explanation):
        quote, body, close = m.group(1), m.group(2), m.group(3)
        try:
            value = ast.literal_eval(quote + body + quote) if close == quote else _unescape(body)
        except (ValueError, SyntaxError):
            value = body
        if isinstance(value, str) and len(value.strip()) >= MIN_QUOTE:
            out.append(value)
    return out


def _unescape(body: str) -> str:
    """A cut literal's text (its escapes decoded as far as they are whole)."""
    try:
        value = ast.literal_eval('"' + body.replace('"', '\\"').rstrip("\\") + '"')
    except (ValueError, SyntaxError):
        return body
    return value if isinstance(value, str) else body
