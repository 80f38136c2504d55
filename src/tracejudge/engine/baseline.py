"""Baselines: one reviewed JSON file per case recording what a good run did.

A baseline is recorded from a run someone has reviewed, committed next to the rules, and
later runs of the same case are diffed against it (the ``baseline`` check). Files are
plain JSON so a reviewer can read and edit them in a pull request.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracejudge.engine.context import ToolMeta, ok
from tracejudge.model.run import Run, ToolCall

_EFFECT_KIND = {"read": "lookup", "write": "mutate", "notify": "notify"}
_SAFE_CASE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
BASELINE_FORMAT = 1


class BaselineError(ValueError):
    """A baseline could not be recorded or read (bad case id, unreadable file)."""


def tool_kind(call: ToolCall, tools: dict[str, ToolMeta]) -> str | None:
    """The kind the rules file declares, else the one the span's effect implies."""
    meta = tools.get(call.name)
    return meta.kind if meta is not None else _EFFECT_KIND.get(call.effect)


def terminal_action(
    calls: Sequence[tuple[ToolCall, str | None]], tools: dict[str, ToolMeta]
) -> str:
    """The category of the last successful state change (``no_action`` when none)."""
    for call, kind in reversed(calls):
        if kind == "mutate" and ok(call):
            meta = tools.get(call.name)
            return (meta.category if meta and meta.category else None) or call.name
    return "no_action"


class BaselineStore:
    """``<directory>/<case_id>.json`` per case; reads are cached per store."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._cache: dict[str, dict[str, Any] | None] = {}

    def path_for(self, case_id: str) -> Path:
        """Where a case's baseline lives; rejects ids that are not safe file names."""
        if not _SAFE_CASE.match(case_id):
            raise BaselineError(f"case id {case_id!r} is not a safe file name")
        return self.directory / f"{case_id}.json"

    def record(self, run: Run, tools: dict[str, ToolMeta] | None = None) -> Path:
        """Write the run's successful tool sequence as the case's baseline; returns the path."""
        if not run.case_id:
            raise BaselineError("the run has no case id; cannot record a baseline")
        tools = tools or {}
        calls = [(c, tool_kind(c, tools)) for c in run.tool_calls if ok(c)]
        doc = {
            "format": BASELINE_FORMAT,
            "case_id": run.case_id,
            "agent": run.agent_name,
            "recorded_from_trace_id": run.trace_id,
            "recorded_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "terminal_action": terminal_action(calls, tools),
            "calls": [
                {"tool": c.name, "kind": kind, "effect": c.effect, "arguments": c.arguments}
                for c, kind in calls
            ],
        }
        path = self.path_for(run.case_id)
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n", "utf-8")
        tmp.replace(path)
        self._cache[run.case_id] = doc
        return path

    def get(self, case_id: str) -> dict[str, Any] | None:
        """The case's baseline, None when there is none; ``BaselineError`` when unreadable."""
        if case_id in self._cache:
            return self._cache[case_id]
        path = self.path_for(case_id)
        if not path.exists():
            self._cache[case_id] = None
            return None
        try:
            doc = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise BaselineError(f"{path}: {exc}") from exc
        if not isinstance(doc, dict) or not isinstance(doc.get("calls"), list):
            raise BaselineError(f"{path}: not a baseline (no 'calls' list)")
        self._cache[case_id] = doc
        return doc
