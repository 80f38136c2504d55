"""The logs receiver's real-instrumentation tests, in their own environment.

tests/sdk_matrix/openai_v2 drives ``tracejudge serve`` with the real
``opentelemetry-instrumentation-openai-v2`` in its event mode; that package cannot share
the dev environment (see its conftest.py), so scripts/openai-v2-env.sh runs it in
.venv-openai-v2 (real packages from the index, cached by uv). Running the script from here
keeps those tests under the one test command.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.support.guards import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]


def test_logs_receiver_passes_with_the_real_openai_v2_instrumentation() -> None:
    """Every test there runs and passes; none is skipped (a skip would hide the
    only real emitter of content-only log records)."""
    proc = subprocess.run(
        ["bash", "scripts/openai-v2-env.sh"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert "openai-v2-env: openai-v2 2.4b0 util-genai 1.1b0" in proc.stdout
    summary = re.search(r"(\d+) passed", proc.stdout)
    assert summary is not None, output[-3000:]
    assert int(summary.group(1)) == 3
    assert " failed" not in proc.stdout
    assert " skipped" not in proc.stdout
