"""Reading verdict JSON lines back: every bad line named, nothing silently skipped."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.report.report_builders import make_record
from tracejudge.engine.verdict import Finding, Verdict
from tracejudge.report.records import VerdictFileError, VerdictRecord, read_all, read_records


def _line(**overrides: object) -> str:
    base: dict[str, object] = {
        "trace_id": "AB" * 16,
        "root_span_id": "cd" * 8,
        "verdict": "fail",
        "case_id": "c1",
        "primary": {"code": "X", "span_id": "ef" * 8, "explanation": "why"},
        "findings": [
            {"code": "X", "severity": "fail", "span_ids": ["EF" * 8], "explanation": "why"}
        ],
    }
    base.update(overrides)
    return json.dumps(base)


def test_round_trip_of_the_public_verdict_json() -> None:
    """What ``Verdict.to_dict`` writes is exactly what the report reads."""
    finding = Finding("NO_REFUND", "fail", "outcome", "r1", ("12" * 8,), "never refunded")
    verdict = Verdict(
        "ab" * 16,
        "cd" * 8,
        "fail",
        {"outcome": "fail"},
        agent="a",
        case_id="c",
        variant="v",
        primary=finding,
        findings=[finding],
    )
    record = VerdictRecord.from_verdict(verdict)
    assert record.primary is not None
    assert (record.primary.code, record.primary.span_id) == ("NO_REFUND", "12" * 8)
    assert record.findings[0].layer == "outcome"
    assert not record.passed
    assert record.hard_failed


def test_ids_are_lowercased(tmp_path: Path) -> None:
    """Uppercase hex from other tools must still match trace files (lowercase) by id."""
    path = tmp_path / "v.jsonl"
    path.write_text(_line() + "\n\n", encoding="utf-8")
    (record,) = read_records(path)
    assert record.trace_id == "ab" * 16
    assert record.findings[0].span_ids == ("ef" * 8,)


def test_gzipped_verdict_files_are_read(tmp_path: Path) -> None:
    """Collector verdict streams are often rotated and gzipped."""
    path = tmp_path / "v.jsonl.gz"
    path.write_bytes(gzip.compress((_line() + "\n").encode()))
    assert len(read_records(path)) == 1


def test_every_bad_line_is_reported_with_file_and_line(tmp_path: Path) -> None:
    """A user fixes a hand-edited file in one pass only if all problems are shown."""
    path = tmp_path / "v.jsonl"
    path.write_text(
        "\n".join([_line(), "{not json", _line(verdict="maybe"), _line(trace_id="zz"), "[]"]),
        encoding="utf-8",
    )
    with pytest.raises(VerdictFileError) as info:
        read_records(path)
    errors = info.value.errors
    assert len(errors) == 4
    assert errors[0].startswith(f"{path}:2: not valid JSON")
    assert f"{path}:3: verdict must be one of" in errors[1]
    assert f"{path}:4: trace_id must be hex" in errors[2]
    assert f"{path}:5: expected a JSON object" in errors[3]


def test_read_all_collects_errors_across_files(tmp_path: Path) -> None:
    """A missing file and a bad file are both reported, not just the first."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trace_id": 1}\n', encoding="utf-8")
    with pytest.raises(VerdictFileError) as info:
        read_all([tmp_path / "missing.jsonl", bad])
    assert len(info.value.errors) == 2
    assert "cannot read verdicts" in info.value.errors[0]
    assert "trace_id must be a string" in info.value.errors[1]


def test_builder_records_are_valid() -> None:
    """The helper used across these tests produces records the reader accepts."""
    assert make_record(3, verdict="warn").passed


def test_a_trace_file_given_as_verdicts_gets_a_hint(tmp_path: Path) -> None:
    """Mixing up trace files and verdict files is the likeliest mistake: say which is which."""
    path = tmp_path / "traces.json"
    path.write_text('{"resourceSpans": []}\n', encoding="utf-8")
    with pytest.raises(VerdictFileError, match="OTLP trace export, not a verdict line"):
        read_records(path)
