"""One judge answer, parsed and held against the run: what each property got, and why.

The model must answer ``{"properties": [{"id", "answer", "span_ids", "reason"}]}`` with
``answer`` one of ``yes``, ``no``, ``insufficient_evidence``. Anything else is
``not_evaluated`` with the reason: a malformed answer, a refusal, a timeout or a 429 is
never a pass and never a zero. A cited span id the run does not have is dropped and
counted; a yes or no left with no valid citation is ``insufficient_evidence``.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from tracejudge.graders.spec import Property

Label: TypeAlias = Literal["yes", "no", "insufficient_evidence", "not_evaluated"]
ANSWERS: frozenset[str] = frozenset({"yes", "no", "insufficient_evidence"})
REASON_MAX = 300


@dataclass(frozen=True, slots=True)
class PropertyAnswer:
    """What one sample said about one property."""

    id: str
    label: Label
    span_ids: tuple[str, ...] = ()
    reason: str = ""
    dropped: int = 0
    """Cited span ids that are not in the run (dropped)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """One sample's answers, one per rubric property, in rubric order."""

    properties: tuple[PropertyAnswer, ...]
    not_evaluated: str | None = None
    """Why the whole sample counts for nothing (malformed, refusal, timeout, rate_limited)."""

    @property
    def dropped(self) -> int:
        """Citations dropped over all properties."""
        return sum(p.dropped for p in self.properties)


def not_evaluated(rubric: Sequence[Property], reason: str) -> Answer:
    """The answer of a sample that could not be had or read: every property not_evaluated."""
    return Answer(tuple(PropertyAnswer(p.id, "not_evaluated", (), reason) for p in rubric), reason)


def strip_fence(text: str) -> str:
    """The text inside a Markdown code fence, if the reply is wrapped in one."""
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else ""
        if t.rstrip().endswith("```"):
            t = t.rstrip()[:-3]
    return t.strip()


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_MAX else text[: REASON_MAX - 3] + "..."


def parse_answer(text: str, rubric: Sequence[Property], span_ids: Collection[str]) -> Answer:
    """Read one model reply against ``rubric``, keeping only citations in ``span_ids``."""
    try:
        doc: Any = json.loads(strip_fence(text))
    except json.JSONDecodeError as exc:
        return not_evaluated(rubric, f"malformed: not JSON ({exc.msg} at {exc.pos})")
    if not isinstance(doc, dict) or not isinstance(doc.get("properties"), list):
        return not_evaluated(rubric, "malformed: no 'properties' list")
    given: dict[str, dict[str, Any]] = {}
    for item in doc["properties"]:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            given.setdefault(item["id"], item)
    known = {s.lower() for s in span_ids}
    out = []
    for prop in rubric:
        item = given.get(prop.id)
        if item is None:
            out.append(PropertyAnswer(prop.id, "not_evaluated", (), "malformed: not answered"))
            continue
        label = item.get("answer")
        if label not in ANSWERS:
            reason = (
                f"malformed: answer {str(label)[:40]!r} is not yes, no or insufficient_evidence"
            )
            out.append(PropertyAnswer(prop.id, "not_evaluated", (), reason))
            continue
        cited = item.get("span_ids")
        raw = [str(c).lower() for c in cited] if isinstance(cited, list) else []
        kept = tuple(dict.fromkeys(c for c in raw if c in known))
        dropped = len(raw) - sum(1 for c in raw if c in known)
        reason = _clip(str(item.get("reason") or ""))
        if label != "insufficient_evidence" and not kept:
            why = f"{dropped} cited span id(s) not in the run" if dropped else "no span cited"
            reason = f"said {label} but {why}" + (f"; {reason}" if reason else "")
            out.append(PropertyAnswer(prop.id, "insufficient_evidence", (), reason, dropped))
            continue
        out.append(PropertyAnswer(prop.id, label, kept, reason, dropped))
    return Answer(tuple(out))
