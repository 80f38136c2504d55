"""Evidence problems the run builder found, made visible in the verdict.

The run builder never raises on a messy trace; it repairs what it can and writes a note
to ``Run.notes`` (see ``tracejudge.model.build``). A rule that reads a repaired run may
pass on evidence that is not all there: a parent that went missing can hide a refund
call, a model/tool span outside every agent run was never judged. So each *class* of
problem that can change a rule's answer becomes one ``F-EVIDENCE-*`` warning on the
verdict (never a pass, never a hard failure), citing the spans involved:

========================== ============================================= ===========
code                       builder note                                  layer
========================== ============================================= ===========
F-EVIDENCE-ORPHAN_SPAN     a span's parent is missing from the trace     trajectory
F-EVIDENCE-PARENT_CYCLE    parent links loop                             trajectory
F-EVIDENCE-UNFINISHED_SPAN a span has no valid end time                  trajectory
F-EVIDENCE-UNJUDGED_STEPS  model/tool spans outside every agent run      trajectory
F-EVIDENCE-BAD_MESSAGES    a span's messages are not a JSON message list outcome
F-EVIDENCE-ARGS_NOT_JSON   tool arguments kept as text (from the steps)  trajectory
========================== ============================================= ===========

Notes that describe where evidence came from rather than a gap in it (the final answer's
source, tool calls inferred from model messages or matched by name, duplicate span
copies, several roots in a trace without agent spans, a requested tool call that never
ran, which trajectory rules judge as behaviour) make no finding, so a healthy trace does
not warn. ``F-EVIDENCE-ARGS_NOT_JSON`` is added only when no rule already
reported it for the run: rules that read arguments say so themselves.

The builder's notes are text (``Run.notes``), so classes are recognised by phrase; the
tests build real traces with each defect to keep the phrases and the builder in step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tracejudge.engine.context import RunContext
from tracejudge.engine.verdict import Finding, Layer, clip_explanation

EVIDENCE_RULE_ID = "tracejudge.evidence"
"""The rule id on findings (and the outcome) about the trace rather than a rule."""

_SPAN_ID = re.compile(r"\b[0-9a-fA-F]{16}\b")
_MISSING_PARENT = re.compile(r"parent ([0-9a-fA-F]{16}) is missing")


@dataclass(slots=True, frozen=True)
class _Class:
    code: str
    layer: Layer
    phrase: re.Pattern[str]
    summary: str


_CLASSES = (
    _Class(
        "F-EVIDENCE-ORPHAN_SPAN",
        "trajectory",
        re.compile(r"parent \S+ is missing from the trace"),
        "span(s) whose parent is missing from the trace (spans dropped upstream?); "
        "calls under the missing parent may not be judged",
    ),
    _Class(
        "F-EVIDENCE-PARENT_CYCLE",
        "trajectory",
        re.compile(r"parent links loop"),
        "parent-link loop(s) cut to judge the trace; the step tree may be wrong",
    ),
    _Class(
        "F-EVIDENCE-UNFINISHED_SPAN",
        "trajectory",
        re.compile(r"has no valid end time"),
        "span(s) without a valid end time (crashed or still running?); timing and order "
        "are approximate",
    ),
    _Class(
        "F-EVIDENCE-UNJUDGED_STEPS",
        "trajectory",
        re.compile(r"outside every agent run.*model/tool spans among them", re.S),
        "model/tool span(s) outside every agent run were not judged",
    ),
    _Class(
        "F-EVIDENCE-BAD_MESSAGES",
        "outcome",
        re.compile(r"is not a JSON list of messages"),
        "span(s) whose messages are not a JSON message list; claims and answers read "
        "from them are missing",
    ),
)
ARGS_NOT_JSON = "F-EVIDENCE-ARGS_NOT_JSON"

CODES: tuple[str, ...] = (*(c.code for c in _CLASSES), ARGS_NOT_JSON)
"""The codes the engine itself emits (not a check type): the failure-code reference must
document them, as it documents every ``CheckSpec.codes``."""


def _scoped(phrase: re.Pattern[str]) -> str:
    """``phrase`` as a group carrying its own flags, so alternatives keep their meaning."""
    flags = "".join(
        ch for flag, ch in ((re.S, "s"), (re.I, "i"), (re.M, "m")) if phrase.flags & flag
    )
    return f"(?{flags}:{phrase.pattern})"


_ANY_CLASS = re.compile("|".join(_scoped(c.phrase) for c in _CLASSES))
"""Every class's phrase in one pattern: a healthy run's provenance notes (one or two) are
ruled out with one search each instead of one per class (evidence_findings ~2.7 -> ~1.8 us per
refund run)."""


def evidence_findings(ctx: RunContext, findings: Sequence[Finding]) -> list[Finding]:
    """One warning per class of evidence problem in the run (empty for a clean run)."""
    run = ctx.run
    out: list[Finding] = []
    if run.notes and any(_ANY_CLASS.search(note) for note in run.notes):
        for cls in _CLASSES:
            hits = [note for note in run.notes if cls.phrase.search(note)]
            if hits:
                out.append(_finding(ctx, cls.code, cls.layer, cls.summary, hits))
    if not any(f.code == ARGS_NOT_JSON for f in findings):
        texts = [(i, c) for i, c in ctx.tool_index if not c.arguments_is_json]
        if texts:
            i = texts[0][0]
            names = sorted({c.name for _, c in texts})
            out.append(
                Finding(
                    code=ARGS_NOT_JSON,
                    severity="warn",
                    layer="trajectory",
                    rule_id=EVIDENCE_RULE_ID,
                    span_ids=tuple(dict.fromkeys(c.span_id.lower() for _, c in texts)),
                    explanation=clip_explanation(
                        f"{len(texts)} tool call(s) with arguments that are not JSON "
                        f"({', '.join(names)}); argument comparisons on them are unreliable"
                    ),
                    step_index=i,
                )
            )
    return out


def _finding(ctx: RunContext, code: str, layer: Layer, summary: str, notes: list[str]) -> Finding:
    cited: list[str] = []
    for note in notes:
        gone = {m.lower() for m in _MISSING_PARENT.findall(note)}  # not in the trace at all
        for sid in _SPAN_ID.findall(note):
            sid = sid.lower()
            if sid not in cited and sid not in gone:
                cited.append(sid)
    if not cited:
        cited.append(ctx.run.root_span_id.lower())
    first = notes[0] + (f" (+{len(notes) - 1} more)" if len(notes) > 1 else "")
    return Finding(
        code=code,
        severity="warn",
        layer=layer,
        rule_id=EVIDENCE_RULE_ID,
        span_ids=tuple(cited[:10]),
        explanation=clip_explanation(f"{len(notes)} {summary}: {first}"),
        absent=True,
    )
