"""The demo's HTML page: the report renderer of ``tracejudge report``, fed the demo's runs.

The demo already holds everything the page needs (the verdict records from the collector
and the spans the agent emitted), so it builds the page directly instead of writing files
and calling the ``report`` command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tracejudge.model.build import build_runs
from tracejudge.model.decode_sdk import spans_from_sdk
from tracejudge.model.files import group_by_trace
from tracejudge.report.html import render_html
from tracejudge.report.records import parse_record
from tracejudge.report.summary import summarize
from tracejudge.report.timeline import build_rows

if TYPE_CHECKING:
    from tracejudge.demo.runner import DemoOutcome


def write_html_report(path: Path, outcome: DemoOutcome) -> None:
    """Write the self-contained report page of the demo's runs to ``path``."""
    records = [parse_record(r, f"verdict {i}") for i, r in enumerate(outcome.records)]
    runs = [
        run
        for spans in group_by_trace(spans_from_sdk(outcome.spans)).values()
        for run in build_runs(spans)
    ]
    rows, missing = build_rows(records, runs)
    page = render_html(
        summarize(records), rows, title="tracejudge demo: refund agent", undrawn=len(missing)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
