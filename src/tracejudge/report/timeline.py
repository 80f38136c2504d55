"""Timelines: a run's steps placed on its own time axis, with findings attached.

The verdict JSON does not carry steps, so a timeline needs the ``Run`` too (``eval``
has it; ``report`` gets it from ``--traces`` files). This module joins the two by trace
id + root span id and by span id, independent of how the result is drawn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tracejudge.model.run import ModelCall, Run, ToolCall
from tracejudge.report.conversation import ConversationView, build_conversation_view
from tracejudge.report.records import FindingRecord, VerdictRecord


def duration_text(ns: float) -> str:
    """A duration in the unit that fits, three significant digits at most: ``33 s``,
    ``2.5 s``, ``500 ms``, ``1.25 ms``, ``850 µs``, ``0 s``."""
    if ns <= 0:
        return "0 s"
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")):
        if ns >= scale * 0.9995 or unit == "ns":  # 999.7 ms is 1 s, not 1000 ms
            value = ns / scale
            if value >= 999.5:
                return f"{value:.0f} {unit}"
            return f"{float(f'{value:.3g}'):g} {unit}"
    raise AssertionError("unreachable")


@dataclass(slots=True, frozen=True)
class TimelineStep:
    """One model or tool call as a box on the run's axis (offsets in ns from run start)."""

    kind: str
    """``model`` or ``tool``."""
    label: str
    span_id: str
    start: int
    end: int
    status: str
    inferred: bool = False
    findings: tuple[FindingRecord, ...] = ()


@dataclass(slots=True)
class TimelineRow:
    """One run: its verdict record, its steps, and findings that name no step."""

    record: VerdictRecord
    duration: int
    steps: list[TimelineStep] = field(default_factory=list)
    run_findings: list[FindingRecord] = field(default_factory=list)
    """Findings on the root span or on spans that are not steps (e.g. the final answer)."""
    conversation: ConversationView | None = None
    """The run's conversation with the findings anchored; None when no message was captured."""


def build_rows(
    records: Sequence[VerdictRecord], runs: Iterable[Run]
) -> tuple[list[TimelineRow], list[VerdictRecord]]:
    """Rows for the records whose run is known, and the records with no run to draw."""
    by_key = {(r.trace_id.lower(), r.root_span_id.lower()): r for r in runs}
    rows: list[TimelineRow] = []
    missing: list[VerdictRecord] = []
    for record in records:
        run = by_key.get(record.key)
        if run is None:
            missing.append(record)
        else:
            rows.append(build_row(record, run))
    return rows, missing


def build_row(record: VerdictRecord, run: Run) -> TimelineRow:
    """Place each step of ``run`` relative to its start and attach findings by span id.

    A step whose times are missing or outside the run (an inferred tool call, a span
    with no end) is drawn at the time of the span it names, else at the run's start, so
    it stays visible instead of stretching the axis.
    """
    span_times = {s.span_id: (s.start_ns, s.end_ns) for s in run.spans}
    for step in run.steps:  # an inferred call names a model call's span: use its times
        if step.start_ns > 0 and step.end_ns >= step.start_ns:
            span_times.setdefault(step.span_id, (step.start_ns, step.end_ns))
    start = run.start_ns
    if start <= 0:
        start = min((s.start_ns for s in run.steps if s.start_ns > 0), default=0)
    end = max([run.end_ns, *(s.end_ns for s in run.steps if s.start_ns >= start)])
    duration = max(1, end - start)
    attached = _attach(record.findings, run)
    steps: list[TimelineStep] = []
    for index, step in enumerate(run.steps):
        s, e = step.start_ns, step.end_ns
        if s <= 0 or e < s or s < start:
            s, e = span_times.get(step.span_id, (start, start))
            if s <= 0 or e < s:
                s = e = start
        label = _model_label(step) if isinstance(step, ModelCall) else step.name
        steps.append(
            TimelineStep(
                kind=step.kind,
                label=label,
                span_id=step.span_id,
                start=s - start,
                end=max(s, e) - start,
                status=step.status,
                inferred=isinstance(step, ToolCall) and step.inferred,
                findings=tuple(attached.get(index, ())),
            )
        )
    placed = {id(f) for fs in attached.values() for f in fs}
    run_findings = [f for f in record.findings if id(f) not in placed]
    conversation = build_conversation_view(run, record.findings)
    return TimelineRow(
        record, duration, steps, run_findings, conversation if conversation.items else None
    )


def _attach(findings: Sequence[FindingRecord], run: Run) -> dict[int, list[FindingRecord]]:
    """Step index -> findings on that step's span.

    An inferred tool call shares its span id with the model call that showed its
    result; a finding on such a span goes to the tool step it names, else to the model
    call.
    """
    by_span: dict[str, list[int]] = {}
    for index, step in enumerate(run.steps):
        by_span.setdefault(step.span_id, []).append(index)
    out: dict[int, list[FindingRecord]] = {}
    for f in findings:
        for sid in f.span_ids:
            candidates = by_span.get(sid, [])
            if not candidates:
                continue
            chosen = candidates[0]
            if len(candidates) > 1:
                named = [i for i in candidates if _names_tool(run.steps[i], f.explanation)]
                models = [i for i in candidates if isinstance(run.steps[i], ModelCall)]
                chosen = (named or models or candidates)[0]
            if f not in out.setdefault(chosen, []):
                out[chosen].append(f)
    return out


def _names_tool(step: ModelCall | ToolCall, text: str) -> bool:
    return isinstance(step, ToolCall) and step.name in text


def _model_label(step: ModelCall) -> str:
    model = step.response_model or step.request_model
    return f"{step.operation} {model}" if model else step.operation
