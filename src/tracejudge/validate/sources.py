"""Verdict sources for validation: the engine judging runs now, or verdicts judged earlier.

Anything that yields ``JudgedRun`` records can be measured: ``from_verdicts`` takes the
engine's verdicts (rules, cases, grader checks: whatever the rules file holds), and
``read_verdict_lines`` reads the JSON lines ``tracejudge eval --output`` and the collector's
verdict stream write, so a judge run elsewhere is measured the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tracejudge.engine.verdict import Verdict
from tracejudge.validate.labels import LabelsError
from tracejudge.validate.reading import FindingLike, JudgedRun


def _primary_text(severity: str, code: str, rule: str, span: str | None) -> str:
    return f"{severity} {code} ({rule})" + (f" span {span}" if span else "")


def from_verdict(v: Verdict) -> JudgedRun:
    """One engine verdict as a judged run."""
    primary = None
    if v.primary is not None:
        span = v.primary.span_ids[0] if v.primary.span_ids else None
        primary = _primary_text(v.primary.severity, v.primary.code, v.primary.rule_id, span)
    elif v.error is not None:
        primary = f"error: {v.error}"
    findings: tuple[FindingLike, ...] = tuple(v.findings)
    return JudgedRun(
        v.run_id or v.trace_id,
        v.trace_id,
        v.verdict,
        findings,
        v.case_id,
        primary,
        v.rules_version,
    )


def from_verdicts(verdicts: Iterable[Verdict]) -> list[JudgedRun]:
    return [from_verdict(v) for v in verdicts]


@dataclass(slots=True, frozen=True)
class ReadFinding:
    """A finding read back from a verdict's JSON form."""

    rule_id: str
    severity: str
    undecided: bool


_VERDICTS = frozenset({"pass", "warn", "fail", "error"})


def read_verdict_lines(text: str, source: str) -> list[JudgedRun]:
    """Judged runs from verdict JSON lines (``Verdict.to_dict``); shadow-pairing lines
    (``record: "shadow"``) are skipped, any other line that is not a verdict is an error.
    Raises ``LabelsError`` naming file and line."""
    errors: list[str] = []
    out: list[JudgedRun] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{where}: not JSON: {exc.msg} (column {exc.colno})")
            continue
        if isinstance(doc, dict) and doc.get("record") == "shadow":
            continue  # a shadow pairing line beside the verdicts, not a run's verdict
        if not isinstance(doc, dict):
            errors.append(f"{where}: a verdict is a JSON object, not {type(doc).__name__}")
            continue
        run = _judged(doc, where, errors)
        if run is not None:
            out.append(run)
    if errors:
        raise LabelsError(errors)
    return out


def _judged(doc: dict[str, Any], where: str, errors: list[str]) -> JudgedRun | None:
    trace_id = doc.get("trace_id")
    verdict = doc.get("verdict")
    if not isinstance(trace_id, str) or verdict not in _VERDICTS:
        errors.append(f"{where}: a verdict needs 'trace_id' and 'verdict' (pass|warn|fail|error)")
        return None
    findings: list[FindingLike] = []
    for i, f in enumerate(doc.get("findings") or ()):
        if not isinstance(f, dict) or not isinstance(f.get("rule"), str):
            errors.append(f"{where}: findings[{i}] needs 'rule' and 'severity'")
            return None
        findings.append(ReadFinding(f["rule"], str(f.get("severity")), f.get("undecided") is True))
    run_id = doc.get("run_id")
    case_id = doc.get("case_id")
    primary = doc.get("primary")
    text = None
    if isinstance(primary, dict) and isinstance(primary.get("code"), str):
        first = findings[0] if findings else ReadFinding("", "", False)
        text = _primary_text(first.severity, primary["code"], first.rule_id, primary.get("span_id"))
    elif isinstance(doc.get("error"), str):
        text = f"error: {doc['error']}"
    version = doc.get("rules_version")
    return JudgedRun(
        run_id if isinstance(run_id, str) and run_id else trace_id,
        trace_id,
        str(verdict),
        tuple(findings),
        case_id if isinstance(case_id, str) else None,
        text,
        version if isinstance(version, str) else "",
    )
