"""The terminal table of ``eval`` at 80, 120 and 200 columns, against stored snapshots.

The runs are the refund example's recorded traces (byte-identical on every checkout),
judged by the real engine with the example's rules and baselines, so the snapshots change
only when the table (or the judging) does. A changed snapshot is reviewed like code: the
files in ``snapshots/`` are the expected output, written out in full.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT
from tracejudge.engine import BaselineStore, Engine, load_rules
from tracejudge.report.loading import load_runs
from tracejudge.report.records import VerdictRecord
from tracejudge.report.text import eval_footer, eval_table, run_labels

REFUND = REPO_ROOT / "examples" / "refund"
SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.fixture(scope="module")
def records() -> list[VerdictRecord]:
    """The four refund variants, judged."""
    engine = Engine(load_rules(REFUND / "rules.yaml"), BaselineStore(REFUND / "baselines"))
    loaded = load_runs(sorted((REFUND / "traces").glob("*.json")))
    assert not loaded.errors
    return [VerdictRecord.from_verdict(engine.judge(run)) for run in loaded.runs]


@pytest.mark.parametrize("width", [80, 120, 200])
def test_the_table_fits_the_width(records: list[VerdictRecord], width: int) -> None:
    """Every line fits; the run, verdict, rule and code are there; the explanation takes the
    rest; no trace or span id."""
    text = eval_table(records, colour=False, width=width) + "\n"
    assert text == (SNAPSHOTS / f"eval_table_{width}.txt").read_text("utf-8")
    assert max(len(line) for line in text.splitlines()) <= width
    assert text.splitlines()[0].split() == ["run", "verdict", "rule", "code", "explanation"]


def test_wide_adds_the_ids_and_cuts_nothing(records: list[VerdictRecord]) -> None:
    """--wide: agent, trace id and span id columns, every cell whole whatever the width."""
    text = eval_table(records, colour=False, width=80, wide=True) + "\n"
    assert text == (SNAPSHOTS / "eval_table_wide.txt").read_text("utf-8")
    assert text == eval_table(records, colour=False, width=None, wide=True) + "\n"
    assert "…" not in text


def test_unfitted_table_keeps_every_character(records: list[VerdictRecord]) -> None:
    """Piped (no width), nothing is cut: the whole explanation, the whole rule id."""
    text = eval_table(records, colour=False, width=None)
    assert "…" not in text
    for r in records:
        if r.primary is not None:
            assert r.primary.explanation in text
    assert eval_footer(records) == "4 run(s): 1 pass, 1 warn, 2 fail"


def test_the_colour_is_on_the_verdict_only(records: list[VerdictRecord]) -> None:
    """Colour codes sit around the verdict word; the columns still line up."""
    plain = eval_table(records, colour=False, width=120).splitlines()
    coloured = eval_table(records, colour=True, width=120).splitlines()
    assert coloured[2] == plain[2].replace("warn ", "\x1b[33mwarn\x1b[0m ", 1)
    assert coloured[3] == plain[3].replace("pass ", "\x1b[32mpass\x1b[0m ", 1)


def test_runs_that_read_the_same_get_their_run_id_then_their_trace() -> None:
    """Labels are case/variant; repetitions get the run id, and without one the trace tail."""

    def rec(trace: int, root: int, run_id: str | None, case: str | None = "c") -> VerdictRecord:
        return VerdictRecord(
            f"{trace:032x}", f"{root:016x}", "pass", case_id=case, variant="v", run_id=run_id
        )

    assert run_labels([rec(1, 1, "r1"), rec(2, 2, "r2"), rec(3, 3, None, case="d")]) == [
        "c/v/r1",
        "c/v/r2",
        "d/v",
    ]
    assert run_labels([rec(0xA1, 1, None), rec(0xB2, 2, None)]) == [
        "c/v …000000a1",
        "c/v …000000b2",
    ]
    assert run_labels([rec(7, 0xAAAA, None), rec(7, 0xBBBB, None)]) == [
        "c/v …00000007:aaaa",
        "c/v …00000007:bbbb",
    ]
    nameless = VerdictRecord("f" * 32, "e" * 16, "pass", agent="support")
    assert run_labels([nameless]) == ["support"]
