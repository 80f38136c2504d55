"""The evidence a grader's model is shown: the run's turns and steps with their span ids.

What the model sees is what the run model holds after the content policy (a run whose
content was dropped has none to show) and after redaction (every text through the same
``Redactor`` the collector and instrumentation use). It is **blind**: no agent version,
variant or experiment label, no model names and no root attributes, and any of those
labels' values that appear in a text are masked, so a judge cannot prefer a variant by
name. Each line starts with the span id the model must cite.

Any change to what this module writes is a new ``RENDERING_VERSION``: the version is part
of every grader's identity (and of its cache key), so answers given to an older rendering
are never reused and a grader's validation is known to be stale.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from tracejudge.model.conversation import turns_of
from tracejudge.model.run import Run, ToolCall, Turn
from tracejudge.redaction import Redactor
from tracejudge.semconv import GEN_AI_AGENT_VERSION, TRACEJUDGE_EXPERIMENT_ID, TRACEJUDGE_VARIANT_ID

RENDERING_VERSION = "evidence/1"
MAX_PIECE_CHARS = 2000
"""One text, argument list or result is cut to this many characters."""
MAX_SYSTEM_CHARS = 12_000
"""A system message (the agent's policy, which the judge often needs) is cut at this."""
MAX_EVIDENCE_CHARS = 60_000
"""The whole rendering is cut (from the middle, said in place) past this many characters."""
MASK = "[label]"
NO_CONTENT = "[content not shown]"


@dataclass(frozen=True, slots=True)
class RenderPolicy:
    """What the renderer may show: ``content=False`` shows only the run's shape (roles,
    tool names, statuses, span ids), as ``--drop-content`` would leave it."""

    content: bool = True
    redactor: Redactor = field(default_factory=Redactor)


@dataclass(frozen=True, slots=True)
class Evidence:
    """A run rendered for a judge."""

    text: str
    span_ids: frozenset[str]
    """Every span id the text shows: the only ones a citation may name."""
    redacted: int
    """Secrets replaced while rendering."""

    @property
    def digest(self) -> str:
        """The hash of what the model is shown (a cache key part), hex."""
        return hashlib.sha256(self.text.encode()).hexdigest()


def labels_of(run: Run) -> tuple[str, ...]:
    """The values a grader must be blind to: variant, experiment and agent version."""
    attrs = run.root_attributes
    values = {
        run.variant_id,
        run.experiment_id,
        run.agent_version,
        attrs.get(TRACEJUDGE_VARIANT_ID),
        attrs.get(TRACEJUDGE_EXPERIMENT_ID),
        attrs.get(GEN_AI_AGENT_VERSION),
    }
    # longest first, so a label that contains another is masked whole
    return tuple(sorted((v for v in values if isinstance(v, str) and len(v) >= 3), key=len)[::-1])


class _Writer:
    def __init__(self, run: Run, policy: RenderPolicy) -> None:
        self.policy = policy
        self.labels = labels_of(run)
        self.lines: list[str] = []
        self.spans: set[str] = set()
        self.redacted = 0

    def text(self, value: Any, limit: int = MAX_PIECE_CHARS) -> str:
        if not self.policy.content:
            return NO_CONTENT
        if value is None:
            return "(none)"
        raw = (
            value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        )
        raw, n = self.policy.redactor.redact(raw)
        self.redacted += n
        for label in self.labels:
            raw = raw.replace(label, MASK)
        if len(raw) > limit:
            raw = raw[:limit] + f" …[{len(raw) - limit} more characters cut]"
        return raw

    def line(self, span_id: str, body: str) -> None:
        sid = span_id.lower()
        if sid:
            self.spans.add(sid)
        self.lines.append(f"[span {sid or '-'}] {body}")


def render(run: Run, policy: RenderPolicy | None = None) -> Evidence:
    """The run as the judge sees it (see the module docstring)."""
    w = _Writer(run, policy or RenderPolicy())
    turns = turns_of(run)
    executed = {s.call_id for s in run.steps if isinstance(s, ToolCall) and s.call_id}
    events: list[tuple[int, int, int, Turn | ToolCall]] = []
    for k, t in enumerate(turns):
        if t.role == "tool" and t.call_id in executed:
            continue  # shown as the executed call, with its status
        events.append((t.step_index, 1 if t.role == "assistant" else 0, k, t))
    for i, step in enumerate(run.steps):
        if isinstance(step, ToolCall):
            events.append((i, 0, len(turns) + i, step))
    events.sort(key=lambda e: e[:3])
    w.lines.append(f"RUN ({len(turns)} turns, {len(run.steps)} steps)")
    last_said = ""
    for _, _, _, ev in events:
        if isinstance(ev, ToolCall):
            status = "error" if ev.status == "error" or ev.error_type else ev.status
            err = f", {ev.error_type}" if ev.error_type else ""
            w.line(
                ev.span_id,
                f"tool {ev.name} ({status}{err}) arguments: {w.text(ev.arguments)}"
                f" result: {w.text(ev.result)}",
            )
            continue
        if ev.role == "tool":
            w.line(ev.span_id, f"tool result for {ev.tool_name or '?'}: {w.text(ev.result)}")
            continue
        if ev.text is not None:
            limit = MAX_SYSTEM_CHARS if ev.role == "system" else MAX_PIECE_CHARS
            w.line(ev.span_id, f"{ev.role}: {w.text(ev.text, limit)}")
            if ev.role == "assistant":
                last_said = ev.text
        for call in ev.tool_calls:
            if call.call_id is not None and call.call_id in executed:
                w.line(ev.span_id, f"{ev.role} requests {call.name} (executed below)")
            else:
                w.line(ev.span_id, f"{ev.role} requests {call.name}: {w.text(call.arguments)}")
    if run.final_answer is not None and run.final_answer != last_said:
        sid = run.final_answer_span_id or run.root_span_id
        w.line(sid, f"final answer: {w.text(run.final_answer)}")
    text = "\n".join(w.lines)
    spans = w.spans
    if len(text) > MAX_EVIDENCE_CHARS:
        text = _cut_middle(w.lines)
        # only what is still shown may be cited
        shown = (ln[6:].split("]", 1)[0] for ln in text.splitlines() if ln.startswith("[span "))
        spans = w.spans.intersection(shown)
    spans.add(run.root_span_id.lower())
    return Evidence(text, frozenset(spans), w.redacted)


def _cut_middle(lines: list[str]) -> str:
    """Keep whole lines from both ends within ``MAX_EVIDENCE_CHARS``, saying what was cut."""
    half = MAX_EVIDENCE_CHARS // 2
    head: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) + 1 > half:
            break
        head.append(line)
        size += len(line) + 1
    tail: list[str] = []
    size = 0
    for line in reversed(lines[len(head) :]):
        if size + len(line) + 1 > half:
            break
        tail.append(line)
        size += len(line) + 1
    cut = len(lines) - len(head) - len(tail)
    return "\n".join([*head, f"[{cut} lines cut to fit the evidence limit]", *tail[::-1]])
