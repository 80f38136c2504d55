"""Verdict records: the public verdict JSON read back, checked field by field.

``tracejudge report`` reads JSON lines written by ``tracejudge eval --format json`` or by
the collector's verdict stream, possibly edited or produced by other tools. Each line is
validated into a typed record so a malformed line gets an error naming its file and line,
instead of a ``KeyError`` deep in the statistics or a run silently left out.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracejudge.engine.verdict import Verdict

VERDICT_VALUES = ("pass", "warn", "fail", "error")
SHADOW_RECORD = "shadow"
"""``record`` of a shadow pairing line (``engine.shadow.ShadowReport``), skipped here."""
_HEX = re.compile(r"[0-9a-f]+")


class VerdictFileError(Exception):
    """A verdict file could not be read; ``errors`` lists each problem with its location."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass(slots=True, frozen=True)
class FindingRecord:
    """One finding as written in the verdict JSON."""

    code: str
    severity: str
    span_ids: tuple[str, ...]
    explanation: str
    layer: str | None = None
    rule: str | None = None
    undecided: bool = False
    """A heuristic could not decide (see ``engine.verdict.Finding.undecided``)."""


@dataclass(slots=True, frozen=True)
class PrimaryRecord:
    """The primary (first causal) failure of a run."""

    code: str
    span_id: str | None
    explanation: str


@dataclass(slots=True, frozen=True)
class VerdictRecord:
    """One judged run, as the report needs it."""

    trace_id: str
    root_span_id: str
    verdict: str
    agent: str | None = None
    case_id: str | None = None
    variant: str | None = None
    run_id: str | None = None
    layers: dict[str, str] = field(default_factory=dict)
    primary: PrimaryRecord | None = None
    findings: tuple[FindingRecord, ...] = ()
    error: str | None = None
    decided_at: float | None = None
    """When the collector decided the run (Unix seconds; absent from ``eval`` output)."""
    request_id: str | None = None
    shadow: bool = False
    """A shadow run: never user traffic, so the gate and pass rates leave it out."""

    @property
    def passed(self) -> bool:
        """Whether the run passed every hard gate.

        ``warn`` counts as passed (only soft checks failed); ``error`` (the run could not
        be judged) counts as not passed, so an unjudgeable run never inflates a pass rate.
        """
        return self.verdict in ("pass", "warn")

    @property
    def undecided(self) -> int:
        """How many of the run's findings are undecided (a heuristic could not decide)."""
        return sum(1 for f in self.findings if f.undecided)

    @property
    def hard_failed(self) -> bool:
        """Whether a hard gate failed (a ``fail`` verdict)."""
        return self.verdict == "fail"

    @property
    def primary_finding(self) -> FindingRecord | None:
        """The finding the primary failure is (it names the rule); None without a primary."""
        p = self.primary
        if p is None:
            return None
        same = [f for f in self.findings if f.code == p.code]
        located = [f for f in same if p.span_id is None or p.span_id in f.span_ids]
        found = located or same
        return found[0] if found else None

    @property
    def key(self) -> tuple[str, str]:
        """What identifies the run across files: trace id and root span id."""
        return (self.trace_id, self.root_span_id)

    @classmethod
    def from_verdict(cls, verdict: Verdict) -> VerdictRecord:
        """The record of an engine verdict, through its public JSON form."""
        return parse_record(verdict.to_dict(), "<verdict>")


def parse_record(data: Any, where: str) -> VerdictRecord:
    """Validate one decoded JSON object; raises ``ValueError`` naming ``where`` and the field."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if "resourceSpans" in data or "resource_spans" in data:
        raise ValueError(
            f"{where}: an OTLP trace export, not a verdict line; judge it with "
            "`tracejudge eval --output`, or give it to `report --traces`"
        )
    trace_id = _hex(data, "trace_id", where)
    root_span_id = _hex(data, "root_span_id", where)
    verdict = data.get("verdict")
    if verdict not in VERDICT_VALUES:
        raise ValueError(
            f"{where}: verdict must be one of {', '.join(VERDICT_VALUES)}, got {verdict!r}"
        )
    layers_raw = data.get("layers") or {}
    if not isinstance(layers_raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in layers_raw.items()
    ):
        raise ValueError(f"{where}: layers must be an object of strings")
    primary = None
    if data.get("primary") is not None:
        p = data["primary"]
        if not isinstance(p, dict):
            raise ValueError(f"{where}: primary must be an object or null")
        primary = PrimaryRecord(
            code=_str(p, "code", f"{where}: primary", required=True) or "",
            span_id=_opt_hex(p, "span_id", f"{where}: primary"),
            explanation=_str(p, "explanation", f"{where}: primary") or "",
        )
    findings_raw = data.get("findings") or []
    if not isinstance(findings_raw, list):
        raise ValueError(f"{where}: findings must be a list")
    findings = tuple(_finding(f, f"{where}: findings[{i}]") for i, f in enumerate(findings_raw))
    return VerdictRecord(
        trace_id=trace_id,
        root_span_id=root_span_id,
        verdict=verdict,
        agent=_str(data, "agent", where),
        case_id=_str(data, "case_id", where),
        variant=_str(data, "variant", where),
        run_id=_str(data, "run_id", where),
        layers=dict(layers_raw),
        primary=primary,
        findings=findings,
        error=_str(data, "error", where),
        decided_at=_time(data, "decided_at", where),
        request_id=_str(data, "request_id", where),
        shadow=data.get("shadow") is True,
    )


def read_records(path: Path, shadows: list[str] | None = None) -> list[VerdictRecord]:
    """Read a JSON-lines verdict file (gzipped or not); blank lines are skipped, and so are
    shadow pairing lines (their ``outcome`` is appended to ``shadows`` when given).

    Every bad line is reported (not just the first), each as ``path:line: problem``.
    """
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise VerdictFileError([f"{path}: cannot read verdicts: {exc}"]) from exc
    records: list[VerdictRecord] = []
    errors: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
            if isinstance(data, dict) and data.get("record") == SHADOW_RECORD:
                # a shadow pairing report beside the verdicts, not a run
                if shadows is not None:
                    shadows.append(str(data.get("outcome")))
                continue
            records.append(parse_record(data, where))
        except json.JSONDecodeError as exc:
            if not records and not errors:
                whole = _whole_document_error(path, text)
                if whole is not None:
                    raise VerdictFileError([whole]) from exc
            errors.append(f"{where}: not valid JSON: {exc.msg} (column {exc.colno})")
        except ValueError as exc:
            errors.append(str(exc))
    if errors:
        raise VerdictFileError(errors)
    return records


def _whole_document_error(path: Path, text: str) -> str | None:
    """One message for a file that is a single (pretty-printed) JSON document rather than
    JSON lines, e.g. an OTLP trace export given as verdicts: its every line would
    otherwise be an error of its own. ``None`` when the file does not parse as a whole."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if isinstance(doc, dict):
        try:
            parse_record(doc, str(path))
        except ValueError as exc:
            return str(exc)
    return f"{path}: one JSON document, not verdict JSON lines (one verdict object per line)"


def read_all(paths: Iterable[Path], shadows: list[str] | None = None) -> list[VerdictRecord]:
    """Records of several files in order; raises one error listing every file's problems.
    ``shadows`` collects the outcomes of the shadow pairing lines (see ``read_records``)."""
    records: list[VerdictRecord] = []
    errors: list[str] = []
    for path in paths:
        try:
            records.extend(read_records(path, shadows))
        except VerdictFileError as exc:
            errors.extend(exc.errors)
    if errors:
        raise VerdictFileError(errors)
    return records


def _time(data: dict[str, Any], key: str, where: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ValueError(f"{where}: {key} must be a number of seconds, got {value!r}")
    return float(value)


def _finding(data: Any, where: str) -> FindingRecord:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object")
    span_ids = data.get("span_ids") or []
    if not isinstance(span_ids, list) or not all(isinstance(s, str) for s in span_ids):
        raise ValueError(f"{where}: span_ids must be a list of strings")
    return FindingRecord(
        code=_str(data, "code", where, required=True) or "",
        severity=_str(data, "severity", where) or "fail",
        span_ids=tuple(s.lower() for s in span_ids),
        explanation=_str(data, "explanation", where) or "",
        layer=_str(data, "layer", where),
        rule=_str(data, "rule", where),
        undecided=data.get("undecided") is True,
    )


def _str(data: dict[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            raise ValueError(f"{where}: {key} is required")
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key} must be a string, got {type(value).__name__}")
    return value


def _hex(data: dict[str, Any], key: str, where: str) -> str:
    value = _str(data, key, where, required=True) or ""
    return _check_hex(value, key, where)


def _opt_hex(data: dict[str, Any], key: str, where: str) -> str | None:
    value = _str(data, key, where)
    return None if value is None else _check_hex(value, key, where)


def _check_hex(value: str, key: str, where: str) -> str:
    lowered = value.lower()
    if _HEX.fullmatch(lowered) is None:
        raise ValueError(f"{where}: {key} must be hex, got {value!r}")
    return lowered
