"""scripts/screenshot_pages.py cuts the README pictures out of a real HTML report.

The pictures themselves are taken by scripts/screenshots.sh with headless Chromium, which is
a docs-maintenance step and not part of the test suite; these tests keep the cutting honest
against the report as it is rendered today, so a change to the report's structure is caught
here rather than by a maintainer photographing the wrong section.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.guards import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "screenshot_pages.py"
TRACES = sorted((ROOT / "examples" / "refund" / "traces").glob("*.json"))


def _report(tmp_path: Path) -> Path:
    html = tmp_path / "eval.html"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tracejudge.cli import main; main()",
            "eval",
            "--rules",
            str(ROOT / "examples" / "refund" / "rules.yaml"),
            "--baselines",
            str(ROOT / "examples" / "refund" / "baselines"),
            "--html",
            str(html),
            *map(str, TRACES),
        ],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
    )
    assert proc.returncode == 1, proc.stderr  # two of the four recorded variants fail
    return html


def _cut(report: Path, stdout_text: str, out: Path) -> subprocess.CompletedProcess[str]:
    demo = out / "demo.txt"
    demo.write_text(stdout_text, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(report), str(demo), str(out)],
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
    )


def test_pages_hold_one_thing_each_from_the_real_report(tmp_path: Path) -> None:
    """Each picture must show what the README caption says: the overview only the summary and
    the per-variant pass rates, the timeline a failed run with a finding marker on a step next
    to a passed run, the terminal page the demo's output escaped as text."""
    report = _report(tmp_path)
    proc = _cut(report, "run  verdict\n<b>silent</b>  fail\n", tmp_path)
    assert proc.returncode == 0, proc.stderr

    overview = (tmp_path / "overview.html").read_text(encoding="utf-8")
    assert "<h2>Pass rate by variant</h2>" in overview
    assert "Trajectories" not in overview
    assert "Failure codes" not in overview

    timeline = (tmp_path / "timeline.html").read_text(encoding="utf-8")
    assert "<h2>Trajectories</h2>" in timeline
    assert timeline.count('<div class="row" id="run-') == 2
    assert "wrong_order" in timeline
    assert "v-fail" in timeline
    assert "v-pass" in timeline
    assert "<path d=" in timeline  # the finding marker drawn on the refund step
    assert "Pass rate by variant" not in timeline

    terminal = (tmp_path / "demo-table.html").read_text(encoding="utf-8")
    assert "&lt;b&gt;silent&lt;/b&gt;" in terminal
    assert "<b>silent</b>" not in terminal
    for page in (overview, timeline, terminal):
        assert "data-size" in page  # measured by screenshots.sh before the picture is taken


def test_a_report_without_timelines_is_refused_with_a_reason(tmp_path: Path) -> None:
    """A report page without trajectories (``report --html`` without ``--traces``) must stop
    the script with a message naming what is missing, not produce an empty picture."""
    page = tmp_path / "summary.html"
    page.write_text(
        "<!DOCTYPE html><html><head><style></style></head><body><h1>r</h1>"
        "<h2>Pass rate by variant</h2><svg></svg></body></html>",
        encoding="utf-8",
    )
    proc = _cut(page, "", tmp_path)
    assert proc.returncode == 2
    assert "no 'Trajectories' section" in proc.stderr
    assert not (tmp_path / "timeline.html").exists()
