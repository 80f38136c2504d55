"""The conversation of a run: every message once, in order, tied to the steps around it.

Each model call re-sends the history, so the messages of one conversation appear many times
(call *k*'s input holds every turn before it). Policies are about that conversation ("obtain
explicit confirmation before booking", "only confirm what the tools did"), so the run builder
reconstructs it once here instead of every check searching model inputs:

- the first model call contributes its input messages; each call's output messages are the
  assistant turns it produced; a later call's input contributes only the messages not seen
  yet. The common case is checked first: the known conversation is a prefix of the input,
  and the rest is new. When the input re-sends neither the model's last answer nor the
  user's first message, it carries only the messages new since the last call (a delta):
  all of them are new, a repeated "Yes." included. Otherwise (a framework trimmed or
  rewrote the history), each message is matched by content, counting repeats, so a second
  "yes" is still a new turn;
- the agent span's output, when no model call produced that text, is a final assistant
  turn placed after every step;
- each tool execution is tied to the assistant turn that requested it (by call id, else by
  tool name), first come first served, so ids that repeat inside a run (they do in real
  transcripts) still pair in order.

Runs of one conversation spread over several traces (one trace per user turn, as many
frameworks emit) share ``gen_ai.conversation.id`` (or ``session.id``); ``merge_conversations``
makes them one run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from tracejudge.model.messages import (
    ARGUMENTS,
    CONTENT,
    ID,
    NAME,
    PART_TEXT,
    PART_TOOL_CALL,
    PART_TOOL_CALL_RESPONSE,
    PARTS,
    RESPONSE,
    ROLE,
    ROLE_ASSISTANT,
    ROLE_SYSTEM,
    ROLE_TOOL,
    ROLE_USER,
    TYPE,
    parse_json_text,
    readable_text,
    text_of,
)
from tracejudge.model.run import (
    ModelCall,
    Note,
    RequestedToolCall,
    Run,
    Step,
    ToolCall,
    Turn,
    TurnRole,
)

__all__ = ["build_conversation", "link_requests", "merge_conversations", "turns_of"]

_ROLES: dict[str, TurnRole] = {
    ROLE_USER: "user",
    ROLE_ASSISTANT: "assistant",
    ROLE_TOOL: "tool",
    ROLE_SYSTEM: "system",
    "developer": "system",
}
_EMBEDDINGS = "embeddings"


def _value_key(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _message_key(message: Mapping[str, Any]) -> str:
    """What makes two copies of one message the same message, whoever serialised them.

    Role and the parts' content only: output messages carry a ``finish_reason`` that the
    copy in the next call's input lacks, and whitespace around text differs by SDK.
    """
    out = [str(message.get(ROLE, ""))]
    for part in message.get(PARTS, ()):
        kind = part.get(TYPE)
        if kind == PART_TEXT:
            content = part.get(CONTENT)
            out.append("t:" + (content.strip() if isinstance(content, str) else ""))
        elif kind == PART_TOOL_CALL:
            out.append(f"c:{part.get(ID)}:{part.get(NAME)}:{_value_key(part.get(ARGUMENTS))}")
        elif kind == PART_TOOL_CALL_RESPONSE:
            out.append(f"r:{part.get(ID)}:{_value_key(part.get(RESPONSE))}")
    return "\x1f".join(out)


def _requested(message: Mapping[str, Any]) -> tuple[RequestedToolCall, ...]:
    calls: list[RequestedToolCall] = []
    for part in message.get(PARTS, ()):
        if part.get(TYPE) == PART_TOOL_CALL:
            call_id = part.get(ID)
            calls.append(
                RequestedToolCall(
                    None if call_id is None else str(call_id),
                    str(part.get(NAME) or ""),
                    part.get(ARGUMENTS),
                )
            )
    return tuple(calls)


def _tool_turns(
    message: Mapping[str, Any], index: int, step: int, span_id: str, time_ns: int
) -> list[Turn]:
    """One tool turn per ``tool_call_response`` part (a message may answer several calls)."""
    out: list[Turn] = []
    for part in message.get(PARTS, ()):
        if part.get(TYPE) != PART_TOOL_CALL_RESPONSE:
            continue
        result = part.get(RESPONSE)
        if isinstance(result, str):
            result, _ = parse_json_text(result)
        call_id = part.get(ID)
        name = message.get(NAME)
        out.append(
            Turn(
                index + len(out),
                "tool",
                text=result if isinstance(result, str) else None,
                call_id=None if call_id is None else str(call_id),
                tool_name=name if isinstance(name, str) else None,
                result=result,
                step_index=step,
                span_id=span_id,
                time_ns=time_ns,
            )
        )
    return out


class _Builder:
    """Accumulates turns; ``keys`` holds one message key per message (not per turn)."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.keys: list[str] = []
        self.counts: dict[str, int] = {}
        self.last_output: str | None = None
        """The key of the last message a model call produced (None before any)."""
        self.first_user: str | None = None
        """The key of the first user message."""

    def add(
        self,
        message: Mapping[str, Any],
        key: str,
        step: int,
        span_id: str,
        time_ns: int,
    ) -> None:
        self.keys.append(key)
        self.counts[key] = self.counts.get(key, 0) + 1
        role = _ROLES.get(str(message.get(ROLE, "")), "user")
        if role == "user" and self.first_user is None:
            self.first_user = key
        index = len(self.turns)
        responses = _tool_turns(message, index, step, span_id, time_ns)
        if responses:
            # Anthropic carries tool results inside user messages; the results are tool
            # turns, and any text beside them is the user's.
            self.turns.extend(responses)
            text = text_of(message)
            if text is None:
                return
            index = len(self.turns)
            role = "user" if role == "tool" else role
            self.turns.append(
                Turn(index, role, text, (), step_index=step, span_id=span_id, time_ns=time_ns)
            )
            return
        text = text_of(message)
        if role == "assistant" and text is not None:
            text = readable_text(text)
        self.turns.append(
            Turn(
                index,
                role,
                text,
                _requested(message) if role == "assistant" else (),
                step_index=step,
                span_id=span_id,
                time_ns=time_ns,
            )
        )

    def absorb_input(
        self, messages: Sequence[Mapping[str, Any]], step: int, call: ModelCall
    ) -> None:
        n = len(self.keys)
        if (
            len(messages) >= n
            and (n == 0 or _message_key(messages[n - 1]) == self.keys[n - 1])
            and (n < 2 or _message_key(messages[0]) == self.keys[0])
        ):
            # The history re-sent as it was (first and last known message in place): only
            # the tail is new. Keying just the ends keeps a run linear in its messages.
            for i in range(n, len(messages)):
                self.add(messages[i], _message_key(messages[i]), step, call.span_id, call.start_ns)
            return
        keys = [_message_key(m) for m in messages]
        if self.last_output is not None and not {self.last_output, self.first_user} & set(keys):
            # Only the messages new since the last call (some orchestrators send deltas):
            # neither the model's last answer nor the user's opening is re-sent, so every
            # message is new, a repeated "Yes." included; a re-sent system prompt is not.
            for message, key in zip(messages, keys, strict=True):
                if key in self.counts and _ROLES.get(str(message.get(ROLE, ""))) == "system":
                    continue
                self.add(message, key, step, call.span_id, call.start_ns)
            return
        seen: dict[str, int] = {}
        for message, key in zip(messages, keys, strict=True):
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > self.counts.get(key, 0):
                self.add(message, key, step, call.span_id, call.start_ns)


def turns_of(run: Run) -> list[Turn]:
    """The run's conversation, built on first use (``Run.turns`` stays empty until then).

    A run made with its turns given (``Run(turns=...)``, a transcript built by hand) keeps
    them; ``merge_conversations`` empties a merged run's turns so they are rebuilt."""
    if not run.conversation_built and not run.turns:
        build_conversation(run)
    return run.turns


def build_conversation(run: Run) -> None:
    """Fill ``run.turns`` and each tool call's ``request_turn`` (see the module docstring);
    ``turns_of`` calls it once per run."""
    run.conversation_built = True
    builder = _Builder()
    for index, step in enumerate(run.steps):
        if not isinstance(step, ModelCall) or step.operation == _EMBEDDINGS:
            continue
        if step.input_messages:
            builder.absorb_input(step.input_messages, index, step)
        end = step.end_ns if step.end_ns >= step.start_ns else step.start_ns
        for message in step.output_messages or ():
            key = _message_key(message)
            builder.add(message, key, index, step.span_id, end)
            builder.last_output = key
    turns = builder.turns
    answer = run.final_answer
    if answer is not None:
        answer = readable_text(answer)
        said = {(t.text or "").strip() for t in turns if t.role == "assistant"}
        if answer.strip() not in said:
            turns.append(
                Turn(
                    len(turns),
                    "assistant",
                    answer,
                    step_index=len(run.steps),
                    span_id=run.final_answer_span_id or run.root_span_id,
                    time_ns=run.end_ns,
                )
            )
    run.turns = turns
    link_requests(run.steps, turns)
    _note_orphan_results(run)


def _note_orphan_results(run: Run) -> None:
    """A tool result whose call id no assistant turn requested is a gap in the evidence:
    the conversation was cut, or results were paired with the wrong calls."""
    if not any(t.role == "assistant" for t in run.turns):
        return
    requested = {c.call_id for t in run.turns if t.role == "assistant" for c in t.tool_calls}
    orphans = [t for t in run.turns if t.role == "tool" and t.call_id not in requested]
    spans = sorted({t.span_id for t in orphans})
    if orphans:
        ids = ", ".join(str(t.call_id) for t in orphans[:5])
        run.notes.append(
            Note(
                "orphan_tool_result",
                tuple(spans),
                f"{len(orphans)} tool result(s) answer no requested tool call (ids {ids})",
            )
        )


def link_requests(steps: Sequence[Step], turns: Sequence[Turn]) -> None:
    """Tie each tool call to the assistant turn that asked for it, in order.

    A request is matched by call id when the call has one that some request carries, else
    by tool name; each request is used once, earliest first, and only requests made before
    the call ran count.
    """
    pending: list[tuple[int, int, RequestedToolCall]] = [
        (t.index, t.step_index, req) for t in turns if t.role == "assistant" for req in t.tool_calls
    ]
    if not pending:
        return
    ids = {req.call_id for _, _, req in pending if req.call_id is not None}
    for index, step in enumerate(steps):
        if not isinstance(step, ToolCall):
            continue
        by_id = step.call_id is not None and step.call_id in ids
        for k, (turn, at, req) in enumerate(pending):
            if at > index:
                break
            if (req.call_id == step.call_id) if by_id else (req.name == step.name):
                step.request_turn = turn
                del pending[k]
                break


def merge_conversations(runs: Sequence[Run]) -> list[Run]:
    """One run per conversation: runs that share ``conversation_id`` are merged, in time
    order, into the first one (its trace and root name the merged run); other runs pass
    through unchanged. The merged run's conversation is rebuilt over all its steps."""
    groups: dict[str, list[Run]] = {}
    out: list[Run] = []
    for run in runs:
        cid = run.conversation_id
        if cid is None:
            out.append(run)
            continue
        group = groups.get(cid)
        if group is None:
            groups[cid] = [run]
            out.append(run)
        else:
            group.append(run)
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda r: (r.start_ns, r.trace_id))
        first = group[0]
        steps: list[Step] = []
        for run in group:
            steps.extend(run.steps)
        steps.sort(key=lambda s: (s.start_ns, s.end_ns, s.span_id))
        first.steps = steps
        first.spans = [span for run in group for span in run.spans]
        first.notes = [note for run in group for note in run.notes]
        first.notes.append(
            Note(
                "merged_conversation",
                tuple(r.root_span_id for r in group),
                f"conversation {first.conversation_id}: {len(group)} runs of traces "
                + ", ".join(r.trace_id for r in group)
                + " merged into one",
            )
        )
        first.start_ns = min(r.start_ns for r in group)
        first.end_ns = max(r.end_ns for r in group)
        last = group[-1]
        first.final_answer = last.final_answer
        first.final_answer_span_id = last.final_answer_span_id
        index = None
        for k in range(len(steps) - 1, -1, -1):
            step = steps[k]
            if isinstance(step, ModelCall) and any(
                m.get(ROLE) == ROLE_ASSISTANT and text_of(m) is not None
                for m in step.output_messages or ()
            ):
                index = k
                break
        first.final_answer_step_index = index
        for step in steps:
            if isinstance(step, ToolCall):
                step.request_turn = None
        first.turns = []
        first.conversation_built = False
        if first.case_id is None:
            first.case_id = next((r.case_id for r in group if r.case_id), None)
    merged = {id(r) for g in groups.values() if len(g) > 1 for r in g[1:]}
    return [r for r in out if id(r) not in merged]
