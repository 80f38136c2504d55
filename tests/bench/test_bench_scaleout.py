"""The sizing benchmark's arithmetic and command line (bench/bench_scaleout.py --plan-only):
what docs/deployment.md#sizing derives from the measured CPU per 1,000 spans."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.guards import WAIT_S

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_scaleout.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH), *args],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )


def test_plan_only_gives_instances_and_balancer_cores() -> None:
    done = _run(
        "--plan-only", "--plan", "10000", "--plan", "100000", "--plan", "0",
        "--instance-cpu-ms", "50", "--lb-cpu-ms", "10", "--headroom", "0.5",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # 50 CPU-ms per 1,000 spans: 20,000 spans/s per core, 10,000 at half headroom.
    assert json.loads(done.stdout) == {
        "plans": [
            {
                "load_spans_per_s": 10000.0,
                "headroom": 0.5,
                "instance_capacity_spans_per_s": 20000,
                "instances": 1,
                "lb_cores": 0.2,
            },
            {
                "load_spans_per_s": 100000.0,
                "headroom": 0.5,
                "instance_capacity_spans_per_s": 20000,
                "instances": 10,
                "lb_cores": 2.0,
            },
            {
                "load_spans_per_s": 0.0,
                "headroom": 0.5,
                "instance_capacity_spans_per_s": 20000,
                "instances": 1,
                "lb_cores": 0.0,
            },
        ]
    }


def test_one_span_over_capacity_needs_another_instance() -> None:
    done = _run(
        "--plan-only", "--plan", "10001", "--instance-cpu-ms", "100", "--lb-cpu-ms", "25",
        "--headroom", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["plans"][0]["instances"] == 2


def test_bad_arguments_are_errors_that_name_the_flag() -> None:
    headroom = _run("--plan-only", "--plan", "1", "--instance-cpu-ms", "1", "--lb-cpu-ms", "1",
                    "--headroom", "1.5")  # fmt: skip
    assert headroom.returncode == 2
    assert "--headroom 1.5: must be in (0, 1]" in headroom.stderr
    missing = _run("--plan-only", "--plan", "1")
    assert missing.returncode == 2
    assert "--plan-only needs --plan, --instance-cpu-ms and --lb-cpu-ms" in missing.stderr
    cpu = _run("--plan-only", "--plan", "1", "--instance-cpu-ms", "0", "--lb-cpu-ms", "1")
    assert cpu.returncode == 2
    assert "CPU per 1,000 spans must be positive, got 0.0" in cpu.stderr
