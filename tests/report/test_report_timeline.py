"""Timelines: steps placed on the run's axis and findings attached to the right step."""

from __future__ import annotations

from tests.report.report_builders import T0, make_run
from tracejudge.engine.verdict import Finding, Verdict
from tracejudge.model.run import ToolCall
from tracejudge.report.records import VerdictRecord
from tracejudge.report.text import eval_table
from tracejudge.report.timeline import build_row, build_rows

MS = 1_000_000


def _record(*findings: Finding) -> VerdictRecord:
    return VerdictRecord.from_verdict(
        Verdict(f"{1:032x}", f"{1:016x}", "fail", {}, findings=list(findings))
    )


def test_inferred_tool_call_takes_the_finding_that_names_it() -> None:
    """An inferred call shares the model call's span: the finding naming it lands on it."""
    run = make_run(1)
    inferred = ToolCall(span_id="c" * 16, name="send_email", inferred=True)
    run.steps.insert(3, inferred)
    on_tool = Finding("DUP", "fail", "policy", "r", ("c" * 16,), "send_email called twice")
    on_model = Finding("CLAIM", "fail", "outcome", "r", ("c" * 16,), "unsupported claim")
    row = build_row(_record(on_tool, on_model), run)
    tool_step, model_step = row.steps[3], row.steps[2]
    assert tool_step.inferred
    assert [f.code for f in tool_step.findings] == ["DUP"]
    assert [f.code for f in model_step.findings] == ["CLAIM"]
    # no times of its own: drawn at the time of the span it names (the model call)
    assert (tool_step.start, tool_step.end) == (510 * MS, 990 * MS)


def test_findings_on_non_step_spans_stay_with_the_run() -> None:
    """A finding on the root span is not lost: it is listed under the row."""
    root = Finding("MISSING", "fail", "outcome", "r", (f"{1:016x}",), "no refund call")
    row = build_row(_record(root), make_run(1))
    assert row.run_findings == [_record(root).findings[0]]
    assert all(not s.findings for s in row.steps)


def test_runs_without_a_start_time_use_their_first_step() -> None:
    """Some exporters leave the root's times out; the axis must still start at the work."""
    run = make_run(1)
    run.start_ns = 0
    run.end_ns = 0
    row = build_row(_record(), run)
    assert row.steps[0].start == 0
    assert row.duration == 980 * MS
    assert run.steps[0].start_ns == T0 + 10 * MS


def test_verdicts_without_a_run_are_reported_missing() -> None:
    """report --traces with the wrong files: say which runs could not be drawn."""
    rows, missing = build_rows([_record()], [make_run(2)])
    assert rows == []
    assert len(missing) == 1


def test_verdict_is_coloured_only_when_asked() -> None:
    """Colour codes help on a terminal and corrupt files and pipes."""
    records = [_record()]
    assert "\x1b[" in eval_table(records, colour=True, width=None)
    assert "\x1b[" not in eval_table(records, colour=False, width=None)
