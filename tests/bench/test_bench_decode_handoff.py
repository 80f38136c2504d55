"""bench/bench_decode_handoff.py prints one row per request size, the decode on the loop
and on the thread, from real SDK-encoded requests (a smoke run: tiny sizes and budgets;
its figures are not asserted, only that the table is made of them)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_it_prints_a_row_per_size() -> None:
    out = subprocess.run(
        [sys.executable, "bench_decode_handoff.py", "--traces", "1", "3", "--rounds", "1",
         "--seconds", "0.01"],
        cwd=BENCH, capture_output=True, text=True, check=True, timeout=300,
    ).stdout  # fmt: skip
    rows = re.findall(
        r"^\| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (-?\d+) \| (-?[\d.]+) \|$", out, re.M
    )
    assert [r[0] for r in rows] == ["1", "3"]
    assert int(rows[0][1]) < int(rows[1][1])  # KiB: three traces weigh more than one
    for _traces, _kib, on_loop, on_thread, extra, _ratio in rows:
        assert int(on_loop) > 0
        assert abs(int(on_thread) - int(on_loop) - int(extra)) <= 1  # the columns' rounding
    assert "INLINE_DECODE_BYTES = 256 KiB" in out
