"""Validation records: which judges have been measured against which labels.

``tracejudge validate --record FILE`` appends one JSON line per validation: the judge's
version (the rules file's content hash, the cases file's, and each grader's identity
``rule=provider/model/prompt_hash/rendering``), the labels file and its content hash, and
the figures per axis. ``tracejudge eval --validations FILE`` then says, per grader rule,
whether its current identity has a record. A change of model, rubric or rendering is a new
identity, so its validation shows as missing until it is run again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RECORD_VERSION = 1


def grader_version(rule_id: str, version: str) -> str:
    """One grader's entry in a judge version: ``rule=provider/model/prompt/rendering``."""
    return f"{rule_id}={version}"


def file_sha256(path: Path) -> str:
    """``sha256:`` and the first 16 hex digits of the file's bytes."""
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def append_record(
    path: Path, judge_version: dict[str, list[str]], labels: Path, document: dict[str, Any]
) -> dict[str, Any]:
    """Append one record (the ``validate --json`` document's figures and gates) to ``path``."""
    record = {
        "record": RECORD_VERSION,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "judge_version": judge_version,
        "labels": str(labels),
        "labels_sha256": file_sha256(labels),
        "figures": [
            {k: v for k, v in f.items() if k != "disagreements"} for f in document["figures"]
        ],
        "gates": document["gates"],
    }
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record, sort_keys=True) + "\n")
    return record


class RecordsError(ValueError):
    """A validations file that cannot be read: each problem with its line."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True, slots=True)
class Validation:
    """One record, as ``eval`` cites it."""

    recorded_at: str
    labels: str
    figures: tuple[dict[str, Any], ...]

    def summary(self) -> str:
        """``policy: false pass 2/51, false fail 0/30`` for each axis over all runs."""
        parts = []
        for f in self.figures:
            if f.get("slice") is not None:
                continue
            fp, ff = f.get("false_pass") or {}, f.get("false_fail") or {}
            parts.append(
                f"{f.get('axis')}: false pass {fp.get('count')}/{fp.get('of')}, "
                f"false fail {ff.get('count')}/{ff.get('of')}"
            )
        return "; ".join(parts) or "no figures"


def load_records(path: Path) -> dict[str, list[Validation]]:
    """Grader entry (``grader_version``) -> its validations, oldest first."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordsError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
    out: dict[str, list[Validation]] = {}
    errors = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            graders = rec["judge_version"].get("graders", [])
            validation = Validation(
                str(rec["recorded_at"]), str(rec["labels"]), tuple(rec["figures"])
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            errors.append(f"{path}: line {n}: not a validation record ({type(exc).__name__})")
            continue
        for g in graders:
            out.setdefault(str(g), []).append(validation)
    if errors:
        raise RecordsError(errors)
    return out
