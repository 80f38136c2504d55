"""The README's offline example, run as a reader would: the command exactly as printed.

It used to give the healthy run ``warn F-EVIDENCE-NO_BASELINE`` (no ``--baselines``),
which reads like a defect of the run. Without a baselines directory the baseline rule now
does not apply, and ``eval`` says so once on stderr.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _readme_eval_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"offline\s+`(tracejudge eval [^`]+)`", text)
    assert match is not None, "the README no longer shows an offline eval command"
    return match.group(1)


def test_readme_offline_eval_passes_the_healthy_run() -> None:
    """Run in examples/refund (which holds ``rules.yaml`` and ``traces/*.json``) by bash,
    so the glob expands as it would for the reader."""
    command = _readme_eval_command()
    assert "--baselines" not in command
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT / "examples" / "refund",
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    rows = {
        cols[3]: cols[4]
        for cols in (line.split() for line in done.stdout.splitlines()[2:-1])
        if len(cols) > 4
    }
    assert rows == {
        "healthy": "pass",
        "half_amount": "pass",  # its only finding is drift from the baseline not given
        "silent_failure": "fail",
        "wrong_order": "fail",
    }, done.stdout
    assert done.returncode == 1, done.stderr  # two runs really fail
    assert "F-EVIDENCE-NO_BASELINE" not in done.stdout
    assert done.stderr.splitlines() == [
        "tracejudge eval: note: no baselines directory given: baseline rule(s) "
        "matches-reviewed-run do not apply (not_applicable); add --baselines DIR"
    ]
