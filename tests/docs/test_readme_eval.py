"""The documented offline commands, run as a reader would: each command exactly as printed.

The README's offline story is: instrument with ``file=`` and ``eval`` the file. The baselines
page's: ``eval`` over the refund example's traces without ``--baselines`` passes the healthy run
(it used to give ``warn F-EVIDENCE-NO_BASELINE``, which reads like a defect of the run; without a
baselines directory the baseline rule does not apply, and ``eval`` says so once on stderr).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.guards import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NO_BASELINES_NOTE = (
    "tracejudge eval: note: no baselines directory given: baseline rule(s) "
    "matches-reviewed-run do not apply (not_applicable); add --baselines DIR"
)


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """By bash, so a glob expands as it would for the reader; the timeout only guards
    against a hang."""
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
        check=False,
    )


def _verdicts(table: str) -> dict[str, str]:
    """Run -> verdict from eval's table (header, rule, rows, summary)."""
    return {
        cols[0]: cols[1]
        for cols in (line.split() for line in table.splitlines()[2:-1])
        if len(cols) > 1
    }


def test_readme_offline_flow_judges_the_snippets_run(tmp_path: Path) -> None:
    """The README's snippet with ``instrument(file="traces.jsonl")`` as its offline paragraph
    says, then its eval command as printed, with the refund example's rules: the snippet's
    agent refunds without looking the order up, and the run in the file is judged for it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    snippet = re.search(r"## Instrument your agent\n\n```python\n(.*?)```", readme, re.S)
    assert snippet is not None, "the README no longer shows the instrumentation snippet"
    assert 'instrument(file="traces.jsonl")' in readme
    match = re.search(r"`(tracejudge eval --rules rules\.yaml traces\.jsonl)`", readme)
    assert match is not None, "the README no longer shows the offline eval command"
    code = snippet.group(1).replace(
        "tracejudge.instrument()", 'tracejudge.instrument(file="traces.jsonl")'
    )
    assert code != snippet.group(1)
    (tmp_path / "agent.py").write_text(code, encoding="utf-8")
    shutil.copy(ROOT / "examples" / "refund" / "rules.yaml", tmp_path / "rules.yaml")
    agent = _run(f"{sys.executable} agent.py", tmp_path)
    assert agent.returncode == 0, agent.stderr

    done = _run(match.group(1), tmp_path)

    assert _verdicts(done.stdout) == {"dup-charge-7": "fail"}, done.stdout
    assert "refund-the-duplicate-order" in done.stdout
    assert "F-ACTION-ORDER" in done.stdout
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [NO_BASELINES_NOTE]


def test_baselines_page_eval_passes_the_healthy_run() -> None:
    """docs/baselines-and-canary.md: in examples/refund, eval without ``--baselines`` passes
    the healthy and half-amount runs and fails the two broken ones."""
    page = (ROOT / "docs" / "baselines-and-canary.md").read_text(encoding="utf-8")
    match = re.search(r"So `(tracejudge eval [^`]+)` in `examples/refund/`", page)
    assert match is not None, "the baselines page no longer shows its eval command"
    assert "--baselines" not in match.group(1)

    done = _run(match.group(1), ROOT / "examples" / "refund")

    assert _verdicts(done.stdout) == {
        "refund-duplicate-charge/healthy": "pass",
        "refund-duplicate-charge/half_amount": "pass",  # only drift from the baseline not given
        "refund-duplicate-charge/silent_failure": "fail",
        "refund-duplicate-charge/wrong_order": "fail",
    }, done.stdout
    assert done.returncode == 1, done.stderr  # two runs really fail
    assert "F-EVIDENCE-NO_BASELINE" not in done.stdout
    assert done.stderr.splitlines() == [NO_BASELINES_NOTE]
