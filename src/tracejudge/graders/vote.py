"""The majority over a grader's samples, per property, with the agreement reported.

A label wins a property when more than half of *all* the samples asked gave it. Samples
that could not be had (``not_evaluated``) count against every label, so one readable
answer out of three is not a decision. When no label has a majority the property is
``not_evaluated`` if most samples were unreadable, else ``insufficient_evidence`` (the
judge disagreed with itself: a split, not a decision).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from tracejudge.graders.answer import Answer, Label
from tracejudge.graders.spec import Property


@dataclass(frozen=True, slots=True)
class PropertyVote:
    """The decision on one property over all samples."""

    id: str
    label: Label
    agreement: float
    """Share of the samples that gave the deciding label (of the largest one, on a split)."""
    span_ids: tuple[str, ...]
    """The citations of the samples that gave the deciding label (in order, once each)."""
    reason: str
    dropped: int
    """Citations dropped (not in the run) over every sample."""


def vote(rubric: Sequence[Property], answers: Sequence[Answer]) -> tuple[PropertyVote, ...]:
    """One ``PropertyVote`` per rubric property, in rubric order."""
    n = len(answers)
    out = []
    for k, prop in enumerate(rubric):
        given = [a.properties[k] for a in answers]
        counts = Counter(p.label for p in given)
        dropped = sum(p.dropped for p in given)
        if n == 0:
            out.append(PropertyVote(prop.id, "not_evaluated", 0.0, (), "no sample", 0))
            continue
        top, top_n = max(counts.items(), key=lambda kv: (kv[1], kv[0] != "not_evaluated"))
        if 2 * top_n > n:
            winners = [p for p in given if p.label == top]
            spans = tuple(dict.fromkeys(s for p in winners for s in p.span_ids))
            reason = next((p.reason for p in winners if p.reason), "")
            if top == "not_evaluated":
                reason = f"{top_n} of {n} samples not evaluated ({reason})"
            out.append(PropertyVote(prop.id, top, top_n / n, spans, reason, dropped))
            continue
        split = ", ".join(f"{label} {c}" for label, c in sorted(counts.items()))
        if 2 * counts["not_evaluated"] >= n:
            first = next(p.reason for p in given if p.label == "not_evaluated")
            label: Label = "not_evaluated"
            reason = f"{counts['not_evaluated']} of {n} samples not evaluated ({first})"
        else:
            label = "insufficient_evidence"
            reason = f"no majority over {n} samples: {split}"
        out.append(PropertyVote(prop.id, label, top_n / n, (), reason, dropped))
    return tuple(out)
