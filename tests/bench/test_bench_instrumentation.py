"""bench/bench_instrumentation.py runs for every provider and gives a row per configuration:
one span per call carrying the request's content for tracejudge (and the floor, OpenAI's).

The peers' rows need .venv-bench (bench/setup-peers.sh installs them there, not in the dev
venv), so this runs the configurations the dev venv has: bare, floor and tracejudge. No
figure is asserted: two calls per state say nothing about time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.guards import PROCESS_S

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_instrumentation.py"


def _rows(stdout: str, provider: str) -> dict[str, list[str]]:
    """The table of ``provider``: config -> its columns."""
    lines = stdout.splitlines()
    start = lines.index(provider) + 2  # the provider's name, then the header
    rows: dict[str, list[str]] = {}
    for line in lines[start:]:
        if not line.strip():
            break
        name, *cells = line.split()
        rows[name] = cells
    return rows


@pytest.mark.parametrize(
    ("provider", "configs"),
    [
        ("openai", ["bare", "floor", "tracejudge"]),
        ("gemini", ["bare", "tracejudge"]),
        ("bedrock", ["bare", "tracejudge"]),
        ("mistral", ["bare", "tracejudge"]),
        ("cohere", ["bare", "tracejudge"]),
    ],
)
def test_each_provider_gives_a_row_per_configuration(provider: str, configs: list[str]) -> None:
    done = subprocess.run(
        [
            sys.executable, str(BENCH), "--providers", provider, "--rounds", "1",
            "--calls", "2", "--block", "1", "--configs", "bare", "floor", "tracejudge",
        ],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout, provider)
    assert list(rows) == configs
    # columns: bare us, overhead us, spread, x floor, tj / this, spans/call, content
    assert [rows[c][-2:] for c in configs] == [
        ["0.00", "-"] if c == "bare" else ["1.00", "yes"] for c in configs
    ]
