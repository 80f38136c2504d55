"""JUnit XML of judged runs (``tracejudge eval --format junit``), for CI systems.

GitLab, Jenkins, Azure Pipelines, CircleCI and the GitHub test-report actions read this
layout: one ``<testsuite>`` per agent, one ``<testcase>`` per run (named as in the terminal
table: case/variant/run id), a ``fail`` verdict as ``<failure>``, an ``error`` verdict (the
run could not be judged) as ``<error>``; a ``warn`` passes with its findings in
``<system-out>``. Each failure's text lists every finding with its rule and spans, and the
trace id, so the run can be found in Jaeger or Tempo.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from tracejudge.report.records import VerdictRecord
from tracejudge.report.text import run_labels

NO_AGENT = "tracejudge"
"""The suite (and class) name of runs that carry no agent name."""


def junit_xml(records: Sequence[VerdictRecord]) -> str:
    """The runs as a JUnit XML document (UTF-8, with its declaration)."""
    suites: dict[str, list[tuple[VerdictRecord, str]]] = {}
    for record, label in zip(records, run_labels(records), strict=True):
        suites.setdefault(record.agent or NO_AGENT, []).append((record, label))
    root = ET.Element("testsuites", {"name": "tracejudge eval", **_counts(records)})
    for agent, runs in suites.items():
        suite = ET.SubElement(root, "testsuite", {"name": agent, **_counts([r for r, _ in runs])})
        for record, label in runs:
            _testcase(suite, agent, record, label)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _counts(records: Sequence[VerdictRecord]) -> dict[str, str]:
    return {
        "tests": str(len(records)),
        "failures": str(sum(r.verdict == "fail" for r in records)),
        "errors": str(sum(r.verdict == "error" for r in records)),
        "skipped": "0",
    }


def _testcase(suite: ET.Element, agent: str, record: VerdictRecord, label: str) -> None:
    case = ET.SubElement(suite, "testcase", classname=agent, name=label)
    details = _details(record)
    if record.verdict == "fail":
        primary = record.primary
        message = f"{primary.code}: {primary.explanation}" if primary else "failed"
        failure = ET.SubElement(case, "failure", message=message, type=_type(record))
        failure.text = details
    elif record.verdict == "error":
        error = ET.SubElement(case, "error", message=record.error or "could not be judged")
        error.set("type", "error")
        error.text = details
    elif record.findings:
        ET.SubElement(case, "system-out").text = details


def _type(record: VerdictRecord) -> str:
    return record.primary.code if record.primary is not None else "fail"


def _details(record: VerdictRecord) -> str:
    """Every finding on a line (severity, code, rule, spans, explanation), then the ids."""
    lines = [
        f"[{f.severity}] {f.code} (rule {f.rule or '-'}, layer {f.layer or '-'}): "
        f"{f.explanation}" + (f" [spans {', '.join(f.span_ids)}]" if f.span_ids else "")
        for f in record.findings
    ]
    if record.error:
        lines.append(f"error: {record.error}")
    lines.append(f"trace {record.trace_id}, root span {record.root_span_id}")
    return "\n".join(lines)
