"""Pairwise: a baseline and a candidate run of the same case, judged side by side.

The two runs are shown as run A and run B; which is A is drawn per pair from a seed and
the pair's ids (``candidate_first``), so the order is reproducible, unrelated to which run
is the candidate, and balanced over many pairs (position bias averages out instead of
favouring one side). The model may answer ``tie``. Its answers are mapped back to baseline
and candidate before they are voted, and each sample is checked like a rubric answer:
citations must be span ids of the two runs, a preference with none is
``insufficient_evidence``, an unreadable sample ``not_evaluated``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from typing import Literal, TypeAlias

from tracejudge.graders.answer import REASON_MAX, strip_fence
from tracejudge.graders.grade import unreadable
from tracejudge.graders.prompt import Identity, identity
from tracejudge.graders.providers import JudgedRun, JudgeRequest, Provider, ProviderError
from tracejudge.graders.rendering import RenderPolicy, render
from tracejudge.graders.spec import GraderSpec
from tracejudge.model.run import Run
from tracejudge.redaction import Redactor

Pick: TypeAlias = Literal["baseline", "candidate", "tie", "insufficient_evidence", "not_evaluated"]

PAIR_SYSTEM = """You compare two recorded runs of an AI agent on the same task, run A and \
run B, each line of their evidence led by the id of the span that recorded it. For each \
property, say which run satisfies it better: "A", "B", "tie" when they do equally (well \
or badly), or "insufficient_evidence" when the evidence cannot decide. "A" or "B" must \
cite the span ids that show the difference. Do not prefer a run for its length, tone or \
position.

Answer with one JSON object and nothing else, of exactly this shape:
{"properties": [{"id": "<property id>", "preferred": "A" | "B" | "tie" | \
"insufficient_evidence", "span_ids": ["<span id>", ...], "reason": "<one sentence>"}]}
with one entry per property, in the order given."""


def candidate_first(seed: str, baseline: Run, candidate: Run) -> bool:
    """Whether the candidate is shown as run A for this pair (a hash of seed and ids)."""
    ids = f"{seed}\x1f{baseline.trace_id}/{baseline.root_span_id}"
    ids += f"\x1f{candidate.trace_id}/{candidate.root_span_id}"
    return hashlib.sha256(ids.encode()).digest()[0] & 1 == 1


@dataclass(frozen=True, slots=True)
class PropertyPick:
    """The decision on one property over the samples."""

    id: str
    pick: Pick
    agreement: float
    reason: str


@dataclass(frozen=True, slots=True)
class PairResult:
    """One pair judged."""

    identity: Identity
    candidate_first: bool
    picks: tuple[PropertyPick, ...]


def pair_identity(spec: GraderSpec) -> Identity:
    """A pairwise grader's identity: its prompt hash covers the pairwise instructions."""
    base = identity(spec)
    h = hashlib.sha256(f"{PAIR_SYSTEM}\x1e{base.prompt_hash}".encode()).hexdigest()[:16]
    return Identity(base.provider, base.model, h, base.rendering_version)


class PairwiseGrader:
    """Compares pairs of runs on ``spec``'s rubric through ``provider``."""

    def __init__(
        self, spec: GraderSpec, provider: Provider, seed: str, policy: RenderPolicy | None = None
    ) -> None:
        self.spec = spec
        self.provider = provider
        self.seed = seed
        self.policy = policy or RenderPolicy(spec.content, Redactor(spec.redact))
        self.identity = pair_identity(spec)

    def compare(self, baseline: Run, candidate: Run) -> PairResult:
        """Judge the pair; never raises for the model's sake."""
        swap = candidate_first(self.seed, baseline, candidate)
        first, second = (candidate, baseline) if swap else (baseline, candidate)
        a, b = render(first, self.policy), render(second, self.policy)
        rubric = [{"id": p.id, "property": p.question} for p in self.spec.properties]
        user = "\n\n".join(
            [
                "Properties:\n" + json.dumps(rubric, ensure_ascii=False, indent=1),
                "Run A:\n" + a.text,
                "Run B:\n" + b.text,
            ]
        )
        request = JudgeRequest(
            self.spec.model,
            PAIR_SYSTEM,
            user,
            self.spec.temperature,
            self.spec.max_tokens,
            (
                JudgedRun(baseline.trace_id, baseline.root_span_id, "baseline"),
                JudgedRun(candidate.trace_id, candidate.root_span_id, "candidate"),
            ),
        )
        samples: list[dict[str, tuple[Pick, str]]] = []
        for _ in range(self.spec.samples):
            samples.append(self._sample(request, a.span_ids | b.span_ids, swap))
        picks = []
        n = len(samples)
        for p in self.spec.properties:
            given = [s[p.id] for s in samples]
            counts = Counter(pick for pick, _ in given)
            top, top_n = counts.most_common(1)[0]
            if 2 * top_n > n:
                reason = next((r for pick, r in given if pick == top and r), "")
                picks.append(PropertyPick(p.id, top, top_n / n, reason))
            else:
                split = ", ".join(f"{k} {c}" for k, c in sorted(counts.items()))
                picks.append(
                    PropertyPick(p.id, "insufficient_evidence", top_n / n, f"no majority: {split}")
                )
        return PairResult(self.identity, swap, tuple(picks))

    def _sample(
        self, request: JudgeRequest, spans: frozenset[str], swap: bool
    ) -> dict[str, tuple[Pick, str]]:
        ids = [p.id for p in self.spec.properties]
        try:
            reply = self.provider.complete(request)
        except ProviderError as exc:
            return dict.fromkeys(ids, ("not_evaluated", exc.reason))
        problem = unreadable(reply)
        if problem is not None:
            return dict.fromkeys(ids, ("not_evaluated", problem))
        try:
            doc = json.loads(strip_fence(reply.text or ""))
            items = {i["id"]: i for i in doc["properties"] if isinstance(i, dict) and "id" in i}
        except (ValueError, KeyError, TypeError):
            return dict.fromkeys(ids, ("not_evaluated", "malformed: not the pairwise shape"))
        side: dict[str, Pick] = {
            "A": "candidate" if swap else "baseline",
            "B": "baseline" if swap else "candidate",
            "tie": "tie",
            "insufficient_evidence": "insufficient_evidence",
        }
        out: dict[str, tuple[Pick, str]] = {}
        for pid in ids:
            item = items.get(pid)
            said = item.get("preferred") if isinstance(item, dict) else None
            if not isinstance(item, dict) or said not in side:
                out[pid] = ("not_evaluated", "malformed: no preferred run")
                continue
            cited = item.get("span_ids")
            real = [c for c in cited if str(c).lower() in spans] if isinstance(cited, list) else []
            reason = " ".join(str(item.get("reason") or "").split())[:REASON_MAX]
            if said in ("A", "B") and not real:
                out[pid] = ("insufficient_evidence", f"preferred {said} without a real citation")
                continue
            out[pid] = (side[said], reason)
        return out
