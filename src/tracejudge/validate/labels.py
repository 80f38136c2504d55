"""Labelled validation sets: what people (or a benchmark) say of each run, per axis.

A labels file is JSON lines, one object per labelled run::

    {"run": "12-1", "labels": {"policy": "fail", "task_success": "pass"},
     "tags": {"task": "12"}, "case": "12", "note": "talking while calling (traj[4])"}

- ``run`` (required): the run's id (``tracejudge.run.id``, a tau-bench ``task-trial``, a
  tau2 simulation id) or, for runs without one, its trace id;
- ``labels`` (required): axis -> ``"pass"``, ``"fail"`` or ``null`` (not labelled on that
  axis); an axis is any name (``policy``, ``task_success``, ``permission``);
- ``tags`` (optional): slice name -> string value, what ``--slice`` groups by;
- ``case`` (optional): the run's case id, checked against the run when given;
- ``name``, ``note`` (optional): how people find the run, why it has its label; shown in
  the disagreement list.

Blank lines are skipped; gzipped files (``.gz``) are read as such. Every problem names the
file and line, and all of them are collected before the file is refused.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

LabelValue: TypeAlias = Literal["pass", "fail"]
LABEL_VALUES: tuple[LabelValue, ...] = ("pass", "fail")
_KEYS = frozenset({"run", "labels", "tags", "case", "name", "note"})


class LabelsError(Exception):
    """A labels file that cannot be used; ``errors`` are ``file:line: problem`` lines."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass(slots=True, frozen=True)
class Labelled:
    """One labelled run: where it was labelled, and what it was labelled."""

    run: str
    labels: dict[str, LabelValue]
    tags: dict[str, str]
    line: int
    case: str | None = None
    name: str | None = None
    note: str | None = None


@dataclass(slots=True, frozen=True)
class LabelSet:
    """A labels file, read: its runs in file order."""

    path: str
    items: tuple[Labelled, ...]

    @property
    def axes(self) -> tuple[str, ...]:
        """Every axis some run is labelled on, in first-seen order."""
        seen: dict[str, None] = {}
        for item in self.items:
            seen.update(dict.fromkeys(item.labels))
        return tuple(seen)

    @property
    def tag_names(self) -> frozenset[str]:
        return frozenset(k for item in self.items for k in item.tags)


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


def load_labels(path: Path) -> LabelSet:
    """Read and check a labels file; raises ``LabelsError`` listing every bad line."""
    try:
        text = _read_text(path)
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise LabelsError([f"{path}: cannot read labels: {exc}"]) from exc
    return parse_labels(text, str(path))


def parse_labels(text: str, source: str) -> LabelSet:
    """Labels from JSON-lines ``text``; ``source`` names it in errors."""
    errors: list[str] = []
    items: list[Labelled] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{where}: not JSON: {exc.msg} (column {exc.colno})")
            continue
        item = _item(doc, where, number, errors)
        if item is None:
            continue
        if item.run in first_line:
            errors.append(
                f"{where}: run {item.run!r} is labelled twice (first on line "
                f"{first_line[item.run]})"
            )
            continue
        first_line[item.run] = number
        items.append(item)
    if errors:
        raise LabelsError(errors)
    if not items:
        raise LabelsError([f"{source}: no labelled runs"])
    return LabelSet(source, tuple(items))


def _item(doc: Any, where: str, number: int, errors: list[str]) -> Labelled | None:
    if not isinstance(doc, dict):
        errors.append(f"{where}: a labelled run is a JSON object, not {type(doc).__name__}")
        return None
    bad = len(errors)
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        errors.append(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))} (known: "
            f"{', '.join(sorted(_KEYS))}; axes go under 'labels', slice tags under 'tags')"
        )
    run = doc.get("run")
    if not isinstance(run, str) or not run:
        errors.append(f"{where}: 'run' must be a non-empty string (the run id or trace id)")
    labels: dict[str, LabelValue] = {}
    raw_labels = doc.get("labels")
    if not isinstance(raw_labels, dict):
        errors.append(f"{where}: 'labels' must be an object of axis -> 'pass' | 'fail' | null")
    else:
        for axis, value in raw_labels.items():
            if value is None:
                continue
            if value == "pass" or value == "fail":
                labels[axis] = value
            else:
                errors.append(
                    f"{where}: labels.{axis}: {value!r} is not one of the axis's values "
                    "('pass', 'fail', or null for not labelled)"
                )
    tags: dict[str, str] = {}
    raw_tags = doc.get("tags", {})
    if not isinstance(raw_tags, dict):
        errors.append(f"{where}: 'tags' must be an object of name -> string")
    else:
        for key, value in raw_tags.items():
            if isinstance(value, str):
                tags[key] = value
            else:
                errors.append(f"{where}: tags.{key}: must be a string, not {json.dumps(value)}")
    optional: dict[str, str | None] = {}
    for key in ("case", "name", "note"):
        value = doc.get(key)
        if value is not None and not isinstance(value, str):
            errors.append(f"{where}: '{key}' must be a string")
            value = None
        optional[key] = value
    if len(errors) > bad or not isinstance(run, str):
        return None
    return Labelled(
        run,
        labels,
        tags,
        number,
        optional["case"],
        optional["name"],
        optional["note"],
    )
