"""Evidence problems the run builder found, made visible in the verdict.

The run builder never raises on a messy trace; it repairs what it can and records a note
in ``Run.notes`` (see ``tracejudge.model.build``). A rule that reads a repaired run may
pass on evidence that is not all there: a parent that went missing can hide a refund
call, a model/tool span outside every agent run was never judged. So each *class* of
problem that can change a rule's answer becomes one ``F-EVIDENCE-*`` warning on the
verdict (never a pass, never a hard failure), citing the spans involved:

========================== =============== ============================================= ==========
code                       note code       builder note                                  layer
========================== =============== ============================================= ==========
F-EVIDENCE-ORPHAN_SPAN     orphan_span     a span's parent is missing from the trace     trajectory
F-EVIDENCE-PARENT_CYCLE    parent_cycle    parent links loop                             trajectory
F-EVIDENCE-UNFINISHED_SPAN unfinished_span a span has no valid end time                  trajectory
F-EVIDENCE-UNJUDGED_STEPS  unjudged_steps  model/tool spans outside every agent run      trajectory
F-EVIDENCE-BAD_MESSAGES    bad_messages    a span's messages are not a JSON message list outcome
F-EVIDENCE-SOURCE_PROBLEM  source_problem  an importer's tracejudge.source.problems      outcome
F-EVIDENCE-ARGS_NOT_JSON   (the steps)     tool arguments kept as text                   trajectory
========================== =============== ============================================= ==========

``F-EVIDENCE-SHADOW_NO_REQUEST`` (note ``shadow_without_request``, trajectory): a run tagged
``tracejudge.run.shadow`` names no usable ``tracejudge.request.id``, so it cannot be paired
with the stable run it mirrors (``tracejudge.engine.shadow``).

Notes that describe where evidence came from rather than a gap in it (the final answer's
source, tool calls inferred from model messages or matched by name, duplicate span
copies, several roots in a trace without agent spans, a requested tool call that never
ran, which trajectory rules judge as behaviour) make no finding, so a healthy trace does
not warn. ``F-EVIDENCE-ARGS_NOT_JSON`` is added only when no rule already
reported it for the run: rules that read arguments say so themselves.

The builder's notes are records (``tracejudge.model.run.Note``: code, span ids, text), so
the mapping is a table keyed by note code: rewording a note's text cannot change a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracejudge.engine.context import RunContext
from tracejudge.engine.verdict import Finding, Layer, clip_explanation
from tracejudge.model.run import Note, NoteCode

EVIDENCE_RULE_ID = "tracejudge.evidence"
"""The rule id on findings (and the outcome) about the trace rather than a rule."""


@dataclass(slots=True, frozen=True)
class _Class:
    code: str
    layer: Layer
    summary: str


_CLASSES: dict[NoteCode, _Class] = {
    "orphan_span": _Class(
        "F-EVIDENCE-ORPHAN_SPAN",
        "trajectory",
        "span(s) whose parent is missing from the trace (spans dropped upstream?); "
        "calls under the missing parent may not be judged",
    ),
    "parent_cycle": _Class(
        "F-EVIDENCE-PARENT_CYCLE",
        "trajectory",
        "parent-link loop(s) cut to judge the trace; the step tree may be wrong",
    ),
    "unfinished_span": _Class(
        "F-EVIDENCE-UNFINISHED_SPAN",
        "trajectory",
        "span(s) without a valid end time (crashed or still running?); timing and order "
        "are approximate",
    ),
    "unjudged_steps": _Class(
        "F-EVIDENCE-UNJUDGED_STEPS",
        "trajectory",
        "model/tool span(s) outside every agent run were not judged",
    ),
    "bad_messages": _Class(
        "F-EVIDENCE-BAD_MESSAGES",
        "outcome",
        "span(s) whose messages are not a JSON message list; claims and answers read "
        "from them are missing",
    ),
    "orphan_tool_result": _Class(
        "F-EVIDENCE-ORPHAN_TOOL_RESULT",
        "trajectory",
        "tool result(s) in the conversation answer no tool call the agent requested "
        "(a transcript cut or mis-paired?); what the agent acted on is uncertain",
    ),
    "source_problem": _Class(
        "F-EVIDENCE-SOURCE_PROBLEM",
        "outcome",
        "the file this run was imported from could not say everything the run needs "
        "(a benchmark simulation whose task is missing?)",
    ),
    "shadow_without_request": _Class(
        "F-EVIDENCE-SHADOW_NO_REQUEST",
        "trajectory",
        "shadow run without a request id; it is never paired with a stable run (nor "
        "counted as user traffic)",
    ),
}
"""Note code -> the finding it makes, in the order findings are listed. Note codes not
here (``tracejudge.model.run.NoteCode``) are provenance and make no finding."""
ARGS_NOT_JSON = "F-EVIDENCE-ARGS_NOT_JSON"

CODES: tuple[str, ...] = (*(c.code for c in _CLASSES.values()), ARGS_NOT_JSON)
"""The codes the engine itself emits (not a check type): the failure-code reference must
document them, as it documents every ``CheckSpec.codes``."""


def evidence_findings(ctx: RunContext, findings: Sequence[Finding]) -> list[Finding]:
    """One warning per class of evidence problem in the run (empty for a clean run)."""
    run = ctx.run
    out: list[Finding] = []
    gaps: dict[NoteCode, list[Note]] = {}
    for note in run.notes:
        if note.code in _CLASSES:
            gaps.setdefault(note.code, []).append(note)
    if gaps:
        for code, cls in _CLASSES.items():
            hits = gaps.get(code)
            if hits:
                out.append(_finding(ctx, cls, hits))
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


def _finding(ctx: RunContext, cls: _Class, notes: list[Note]) -> Finding:
    # A dict keeps the first-seen order with O(1) membership: a list here made a run of
    # 40,000 orphan spans cost seconds (every note searched every span cited before it).
    seen: dict[str, None] = {}
    for note in notes:
        for sid in note.span_ids:
            seen.setdefault(sid.lower(), None)
    cited = list(seen)
    if not cited:
        cited.append(ctx.run.root_span_id.lower())
    first = notes[0].text + (f" (+{len(notes) - 1} more)" if len(notes) > 1 else "")
    return Finding(
        code=cls.code,
        severity="warn",
        layer=cls.layer,
        rule_id=EVIDENCE_RULE_ID,
        span_ids=tuple(cited[:10]),
        explanation=clip_explanation(f"{len(notes)} {cls.summary}: {first}"),
        absent=True,
    )
