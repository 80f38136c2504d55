"""What the grader tests share: the airline dev set's run 0-0 and the spans it cites, and the
key the scripted judge is asked with."""

from __future__ import annotations

import functools
from pathlib import Path

from tracejudge.model.run import Run
from tracejudge.report.loading import load_runs

ROOT = Path(__file__).resolve().parents[2]
AIRLINE = ROOT / "examples" / "airline" / "tau-bench-dev" / "gpt-4o-airline.dev.json"
KEY = "sk-test-judge-key-0123456789"
BOOKING = "a4c743adbdbe6de5"
"""The span of run 0-0's book_reservation call."""
FINAL = "100dc8b073ddb2e4"
"""The span of run 0-0's final answer."""


@functools.cache
def airline_run() -> Run:
    """Run 0-0 of the airline dev set."""
    return next(r for r in load_runs([AIRLINE]).runs if r.run_id == "0-0")
