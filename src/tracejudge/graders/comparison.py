"""Pairing a baseline's runs with a candidate's by case, and counting a pairwise grader's
picks over the pairs with an exact sign test.

A pair is two runs of the same case id: the k-th baseline run of a case with the k-th
candidate run of it, in the order the files give them. Runs with no case id, and the runs
of a case the other side has fewer of, are unpaired: counted and named, never compared
with a run of another case.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from tracejudge.graders.pairwise import PairResult, Pick
from tracejudge.model.run import Run
from tracejudge.report.stats import Interval, mcnemar_exact, wilson_interval

PICKS: tuple[Pick, ...] = ("candidate", "baseline", "tie", "insufficient_evidence", "not_evaluated")


@dataclass(frozen=True, slots=True)
class Pairing:
    """The pairs formed, and what could not be paired."""

    pairs: tuple[tuple[Run, Run], ...]
    unpaired_baseline: tuple[Run, ...]
    unpaired_candidate: tuple[Run, ...]


def pair_by_case(baseline: list[Run], candidate: list[Run]) -> Pairing:
    """Pair runs of the same case id in file order (see the module's docstring)."""
    by_case: dict[str, list[Run]] = defaultdict(list)
    left_b: list[Run] = []
    for run in baseline:
        if run.case_id is None:
            left_b.append(run)
        else:
            by_case[run.case_id].append(run)
    taken: dict[str, int] = defaultdict(int)
    pairs: list[tuple[Run, Run]] = []
    left_c: list[Run] = []
    for run in candidate:
        case = run.case_id
        if case is None or taken[case] >= len(by_case.get(case, ())):
            left_c.append(run)
            continue
        pairs.append((by_case[case][taken[case]], run))
        taken[case] += 1
    for case, runs in by_case.items():
        left_b.extend(runs[taken[case] :])
    return Pairing(tuple(pairs), tuple(left_b), tuple(left_c))


@dataclass(slots=True)
class PropertyTally:
    """One property's picks over the pairs."""

    id: str
    counts: dict[Pick, int] = field(default_factory=lambda: dict.fromkeys(PICKS, 0))

    @property
    def decided(self) -> int:
        """Pairs where one run was preferred."""
        return self.counts["candidate"] + self.counts["baseline"]

    @property
    def candidate_share(self) -> Interval:
        """The candidate's share of the decided pairs, with its Wilson 95% interval."""
        return wilson_interval(self.counts["candidate"], self.decided)

    @property
    def p_value(self) -> float:
        """Two-sided exact sign test on the decided pairs (ties and undecided left out)."""
        return mcnemar_exact(self.counts["candidate"], self.counts["baseline"])


def tally(property_ids: list[str], results: list[PairResult]) -> list[PropertyTally]:
    """Each property's picks over ``results``, in the rubric's order."""
    out = {pid: PropertyTally(pid) for pid in property_ids}
    for result in results:
        for pick in result.picks:
            if pick.id in out:
                out[pick.id].counts[pick.pick] += 1
    return list(out.values())
