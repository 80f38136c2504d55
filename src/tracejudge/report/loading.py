"""Trace files to runs for the offline tools, one file's failure never hiding the others.

``eval``, ``baseline record`` and ``report --traces`` all start the same way: read each
file, group spans by trace (a trace may be split across files), build runs. A malformed
file is reported by name and skipped so the rest are still judged, and so is each bad line
of a JSON-lines file (or message of a framed protobuf one), its good lines read; the caller
turns the collected problems into exit status 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tracejudge.model.build import build_runs
from tracejudge.model.conversation import merge_conversations
from tracejudge.model.errors import OtlpDecodeError
from tracejudge.model.files import group_by_trace, read_spans
from tracejudge.model.run import Run
from tracejudge.model.spans import SpanRecord


@dataclass(slots=True)
class LoadedRuns:
    """Runs built from the readable files, and one message per file that was not."""

    runs: list[Run] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    files_read: int = 0
    spans: int = 0
    summaries: list[str] = field(default_factory=list)
    """One line per benchmark results file: what was read and what was not."""


def load_runs(paths: Sequence[Path]) -> LoadedRuns:
    """Decode every file, then build runs trace by trace (first-seen order); runs of one
    conversation (``gen_ai.conversation.id``) spread over several traces become one run."""
    out = LoadedRuns()
    spans: list[SpanRecord] = []
    for path in paths:
        try:
            file_spans, bad_parts = read_spans(path, out.summaries)
        except OtlpDecodeError as exc:
            out.errors.append(f"malformed trace file {exc}")
            continue
        except OSError as exc:
            out.errors.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        out.files_read += 1
        out.errors.extend(f"skipped {bad}" for bad in bad_parts)
        if not file_spans and not bad_parts:
            out.errors.append(f"{path}: no spans in file (is it an OTLP trace export?)")
        spans.extend(file_spans)
    out.spans = len(spans)
    for trace_id, trace_spans in group_by_trace(spans).items():
        try:
            out.runs.extend(build_runs(trace_spans))
        except Exception as exc:  # a builder bug must not hide the other traces
            out.errors.append(f"trace {trace_id}: cannot build runs: {exc}")
    out.runs = merge_conversations(out.runs)
    return out
