"""The verdict sinks: the line per run (``TextSink``) written straight from the verdict is
the line its JSON record gives, and the sinks that store records still get them."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import pytest

from tracejudge.collector.exporters.fanout import FanOut
from tracejudge.collector.exporters.sinks import TextSink, VerdictLineSink
from tracejudge.collector.storage.durability import durability_for
from tracejudge.engine.verdict import Finding, Verdict
from tracejudge.report.records import parse_record
from tracejudge.report.text import engine_verdict_line, verdict_line

TRACE = "0af7651916cd43dd8448eb211c80319c"
ROOT = "b7ad6b7169203331"
OTHER = "00f067aa0ba902b7"


def _finding(
    code: str, rule: str, spans: tuple[str, ...], explanation: str = "why", layer: str = "policy"
) -> Finding:
    return Finding(code, "fail", layer, rule, spans, explanation)  # type: ignore[arg-type]


def _verdicts() -> list[Verdict]:
    """Runs that exercise every part of the line: labels, primary (located on a later
    finding, not among the findings, span ids in capitals), error text, shadow, clipping."""
    at_other = _finding("tool.unauthorized", "no-refunds", (OTHER,))
    at_root = _finding("tool.unauthorized", "no-refunds-root", (ROOT,))
    no_rule = _finding("budget.tokens", "", (ROOT,), layer="budget")
    long_text = _finding("answer.claim", "claims", (ROOT,), explanation="é" * 600)
    return [
        Verdict(TRACE, ROOT, "pass", {}, agent="refunds"),
        Verdict(TRACE, ROOT, "pass", {}),
        Verdict(TRACE, ROOT, "warn", {}, agent="a", case_id="c1", variant="v2", run_id="r3"),
        Verdict(TRACE, ROOT, "pass", {}, agent="a", run_id="only-run", shadow=True),
        Verdict(
            TRACE,
            ROOT,
            "fail",
            {"policy": "fail"},
            agent="refunds",
            case_id="case\n7",
            primary=at_root,
            findings=[at_other, at_root],
        ),
        Verdict(
            TRACE.upper(),
            ROOT,
            "fail",
            {},
            case_id="c",
            primary=_finding("tool.unauthorized", "x", (ROOT.upper(),)),
            findings=[at_root],
        ),
        Verdict(TRACE, ROOT, "fail", {}, primary=at_other, findings=[no_rule]),
        Verdict(TRACE, ROOT, "fail", {}, primary=no_rule, findings=[no_rule]),
        Verdict(TRACE, ROOT, "fail", {}, primary=long_text, findings=[long_text]),
        Verdict(TRACE, ROOT, "fail", {}, primary=_finding("x.y", "r", ()), findings=[at_other]),
        Verdict(TRACE, ROOT, "error", {}, agent="a", error="JudgeTimeout:\tran out\x1b[31m"),
        Verdict(TRACE, ROOT, "error", {}, error=""),
    ]


@pytest.mark.parametrize("v", _verdicts())
def test_the_line_from_the_verdict_is_the_line_from_its_record(v: Verdict) -> None:
    """One format: the collector's line read from the verdict is the report's line of the
    verdict's JSON record, character for character."""
    assert engine_verdict_line(v) == verdict_line(parse_record(v.to_dict(), "verdict"))


def test_a_located_primary_names_the_rule_of_its_own_finding() -> None:
    """The rule shown is that of the finding at the primary's span, not the first finding
    with its code (and the line says what the run was, whatever the format's details)."""
    line = engine_verdict_line(_verdicts()[4])
    assert line == ("fail  case 7  tool.unauthorized [no-refunds-root]: why  (trace " + TRACE + ")")


def test_text_sink_writes_the_same_lines_from_verdicts_as_from_records() -> None:
    verdicts = _verdicts()
    from_records, from_verdicts = io.StringIO(), io.StringIO()
    TextSink(from_records).emit([v.to_dict() for v in verdicts])
    TextSink(from_verdicts).emit_verdicts(verdicts)
    assert from_verdicts.getvalue() == from_records.getvalue()
    assert from_verdicts.getvalue().count("\n") == len(verdicts)


def test_an_error_verdict_without_a_root_still_gets_its_line() -> None:
    """A trace whose decision failed before its root arrived has no root span id: its
    record does not read back as a verdict (an empty id is not hex), and the line built
    through the record was lost with a logged exception. From the verdict it is shown."""
    v = Verdict(TRACE, "", "error", {}, error="deciding the trace failed: ValueError: x")
    out = io.StringIO()
    TextSink(out).emit_verdicts([v])
    assert out.getvalue() == (
        f"error (unnamed run)  deciding the trace failed: ValueError: x  (trace {TRACE})\n"
    )


class _Records:
    """A sink that stores records (as ``JsonlSink`` and ``WebhookSink`` do)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def emit(self, records: Sequence[dict[str, Any]]) -> None:
        self.records.extend(records)

    async def close(self) -> None:
        return None


def test_fanout_sends_records_to_storing_sinks_and_verdicts_to_showing_ones() -> None:
    records_sink, out = _Records(), io.StringIO()
    text = TextSink(out)
    fanout = FanOut([], [records_sink, text], durability_for(None, 1.0), 1 << 20)
    assert isinstance(text, VerdictLineSink)
    assert not isinstance(records_sink, VerdictLineSink)
    assert fanout.record_sinks == [records_sink]
    assert fanout.line_sinks == [text]
    verdicts = _verdicts()[:2]
    records = [v.to_dict() for v in verdicts]
    fanout.emit(records, verdicts)
    assert records_sink.records == records
    assert out.getvalue() == "".join(engine_verdict_line(v) + "\n" for v in verdicts)


def test_text_sink_still_shows_shadow_pairing_reports() -> None:
    out = io.StringIO()
    TextSink(out).emit([{"record": "shadow", "outcome": "diverged", "request_id": "rq-1"}])
    assert out.getvalue() == "shadow pairing: diverged (request rq-1)\n"
