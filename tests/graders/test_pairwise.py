"""Pairwise comparison of a baseline and a candidate run of the same case.

No language model can run on these machines, so the judge's answers are scripted: the
real ``openai`` SDK talks to a loopback server answering with replies written here. The
runs are real airline dev-set runs (two runs of the same task).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from tests.support.judge_server import JudgeServer, openai_reply
from tracejudge.graders.pairwise import PairwiseGrader, PropertyPick, candidate_first
from tracejudge.graders.providers import OpenAIProvider
from tracejudge.graders.spec import GraderSpec
from tracejudge.model.run import Run
from tracejudge.report.loading import load_runs

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "examples" / "airline" / "tau-bench-dev" / "gpt-4o-airline.dev.json"
SPEC = GraderSpec.from_params(
    {
        "model": "judge-1",
        "properties": [
            {"id": "confirmed", "question": "The user said yes before each booking change."},
            {"id": "concise", "question": "The agent asks for nothing it already knows."},
        ],
    }
)


@functools.cache
def _runs() -> dict[str, Run]:
    return {str(r.run_id): r for r in load_runs([RUNS]).runs}


def _pairs() -> list[tuple[Run, Run]]:
    runs = _runs()
    return [(runs[f"{k}-0"], runs[f"{k}-1"]) for k in range(0, 50, 2) if f"{k}-1" in runs]


def test_the_order_is_drawn_per_pair_reproducibly_and_balanced() -> None:
    """Same seed, same order; the candidate comes first in about half the pairs, and
    another seed draws another order for some pairs."""
    pairs = _pairs()
    first = [candidate_first("s1", b, c) for b, c in pairs]
    assert first == [candidate_first("s1", b, c) for b, c in pairs]
    assert 0.25 <= sum(first) / len(first) <= 0.75
    assert first != [candidate_first("s2", b, c) for b, c in pairs]


def _seed_where(swap: bool, baseline: Run, candidate: Run) -> str:
    return next(
        s
        for s in (f"seed-{k}" for k in range(64))
        if candidate_first(s, baseline, candidate) is swap
    )


def test_answers_are_mapped_back_to_baseline_and_candidate() -> None:
    """Scripted: the model prefers run A on one property and says tie on the other. When
    the candidate was shown first, A is the candidate; otherwise the baseline."""
    baseline, candidate = _runs()["0-0"], _runs()["0-1"]
    for swap in (True, False):
        shown_first = candidate if swap else baseline
        reply = {
            "properties": [
                {
                    "id": "confirmed",
                    "preferred": "A",
                    "span_ids": [shown_first.steps[-1].span_id],
                    "reason": "A listed the details",
                },
                {"id": "concise", "preferred": "tie", "span_ids": []},
            ]
        }
        with JudgeServer([openai_reply(json.dumps(reply))]) as server:
            grader = PairwiseGrader(
                SPEC,
                OpenAIProvider("sk-test-pair-key-0123456789", server.base_url, SPEC.timeout_s),
                _seed_where(swap, baseline, candidate),
            )
            result = grader.compare(baseline, candidate)
        assert result.candidate_first is swap
        assert result.picks == (
            PropertyPick(
                "confirmed", "candidate" if swap else "baseline", 1.0, "A listed the details"
            ),
            PropertyPick("concise", "tie", 1.0, ""),
        )
        user = server.requests[0]["messages"][1]["content"]
        run_a = user.split("Run A:\n", 1)[1].split("\n\nRun B:\n", 1)[0]
        assert f"[span {shown_first.steps[-1].span_id}]" in run_a


def test_a_preference_without_a_real_citation_decides_nothing() -> None:
    """Scripted: "B" citing an invented span id is insufficient_evidence."""
    baseline, candidate = _runs()["2-0"], _runs()["2-1"]
    reply = {
        "properties": [
            {"id": "confirmed", "preferred": "B", "span_ids": ["0000000000000000"]},
            {"id": "concise", "preferred": "maybe"},
        ]
    }
    with JudgeServer([openai_reply(json.dumps(reply))]) as server:
        grader = PairwiseGrader(
            SPEC,
            OpenAIProvider("sk-test-pair-key-0123456789", server.base_url, SPEC.timeout_s),
            "s",
        )
        picks = grader.compare(baseline, candidate).picks
    assert [(p.pick, p.reason) for p in picks] == [
        ("insufficient_evidence", "preferred B without a real citation"),
        ("not_evaluated", "malformed: no preferred run"),
    ]
