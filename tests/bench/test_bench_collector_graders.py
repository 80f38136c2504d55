"""bench/bench_collector.py's grader modes run against the collector as it is now: the
rules file it writes (the benchmark rules and a grader on every run) is accepted by
``tracejudge serve``, the scripted judge is reached, and each mode reports its row.

No language model can run here: the judge is the tests' scripted loopback server, held
(it never answers while the window runs) or answering at once. Nothing here is a timing
assertion: under load the window may judge few runs, so only the shape is checked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.guards import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "bench_collector.py"


def test_grader_modes_run_and_report_what_the_graders_did() -> None:
    tracejudge = Path(sys.executable).parent / "tracejudge"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--extra-build", f"this={tracejudge}", "--builds", "this",
         "--graders", "held", "--seconds", "4", "--throughput-only"],
        capture_output=True, text=True, timeout=PROCESS_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    report = json.loads(out[out.rindex('{\n "cpus"') :])
    rows = [(r["graders"], r["transport"]) for r in report["throughput"]]
    assert rows == [("held", "grpc"), ("held", "http")]
    for row in report["throughput"]:
        activity = row["grader_activity"]
        assert set(activity) == {"runs", "waiting", "calls", "not_evaluated", "over_budget"}
