"""Builders for verdicts and runs used by the report tests (plain engine/model objects)."""

from __future__ import annotations

from tracejudge.engine.verdict import Finding, Verdict
from tracejudge.model.run import ModelCall, Run, ToolCall
from tracejudge.report.records import VerdictRecord

T0 = 1_700_000_000_000_000_000


def make_record(
    n: int,
    *,
    case: str | None = "c1",
    variant: str | None = "A",
    verdict: str = "pass",
    codes: tuple[str, ...] = (),
    severity: str = "fail",
) -> VerdictRecord:
    """A verdict record for run number ``n`` (distinct ids per n), through ``Verdict.to_dict``."""
    findings = [
        Finding(code, "fail" if severity == "fail" else "warn", "outcome", "r", (f"{n:016x}",), "x")
        for code in codes
    ]
    v = Verdict(
        trace_id=f"{n:032x}",
        root_span_id=f"{n:016x}",
        verdict=verdict,  # type: ignore[arg-type]
        layers={"outcome": "pass"},
        agent="agent",
        case_id=case,
        variant=variant,
        primary=findings[0] if findings else None,
        findings=findings,
    )
    return VerdictRecord.from_verdict(v)


def make_run(n: int, *, tool_status: str = "ok") -> Run:
    """A run with a model call, a tool call and a final model call, 1 s long."""
    ms = 1_000_000
    return Run(
        trace_id=f"{n:032x}",
        root_span_id=f"{n:016x}",
        agent_name="agent",
        steps=[
            ModelCall(
                span_id="a" * 16,
                operation="chat",
                request_model="m",
                status="ok",
                start_ns=T0 + 10 * ms,
                end_ns=T0 + 300 * ms,
            ),
            ToolCall(
                span_id="b" * 16,
                name="issue_refund",
                status=tool_status,  # type: ignore[arg-type]
                start_ns=T0 + 310 * ms,
                end_ns=T0 + 500 * ms,
            ),
            ModelCall(
                span_id="c" * 16,
                operation="chat",
                request_model="m",
                status="ok",
                start_ns=T0 + 510 * ms,
                end_ns=T0 + 990 * ms,
            ),
        ],
        start_ns=T0,
        end_ns=T0 + 1000 * ms,
    )
