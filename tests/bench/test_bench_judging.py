"""bench/bench_judging.py runs against the collector as it is now, in both of its modes
(it called a ``Pipeline.decide`` that had moved to the ``Decider``, and its event-loop
worker lacked what ``AdaptiveJudging`` now offers ``/metrics``, so it failed at once)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.guards import PROCESS_S

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_judging.py"


@pytest.mark.parametrize(
    ("flags", "judging"), [((), "worker thread"), (("--inline",), "event loop")]
)
def test_both_modes_judge_the_trace_and_report(flags: tuple[str, ...], judging: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--rules-count", "3", "--tools", "5", *flags],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["judging"] == judging
    assert (report["rules"], report["tools"]) == (3, 5)
    assert report["healthz_polls"] >= 1
    assert report["process_pool_pickle_us_per_trace"] > 0
