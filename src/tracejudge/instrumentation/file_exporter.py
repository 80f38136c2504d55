"""The OTLP file exporter: spans as OTLP/JSON lines in a file, for ``tracejudge eval``.

What the OpenTelemetry specification calls the OTLP File Exporter
(``specification/protocol/file-exporter.md``, in development): one ``ExportTraceServiceRequest``
per line in the OTLP/JSON encoding (a JSON lines file, UTF-8, ``\\n``-separated, preferably
``.jsonl``), written to a file or to stdout, paired with a batching span processor. It is
the layout the OpenTelemetry Collector's file exporter and ``tracejudge serve --output``
write, so ``tracejudge eval`` reads what any of them wrote.

``instrument(file="traces.jsonl")`` sets it up; so does ``OTEL_TRACES_EXPORTER=otlp_file``
(the exporter's name in OpenTelemetry's declarative configuration, ``otlp_file/development``,
which is accepted too) with the file in ``TRACEJUDGE_TRACES_FILE``: the OpenTelemetry
environment variables name no file for it, and its declarative ``output_stream`` defaults
to stdout, as this does without the variable. Lines are appended, so several runs (and
several processes) add to one file.

Telemetry never raises into the application: a write that fails (a full disk) is one
warning, and the batch is reported as failed to the SDK.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger("tracejudge")

STDOUT = "stdout"
"""The output stream that is standard output (the specification's default)."""


def output_path(value: str) -> str | None:
    """``stdout`` (None), a ``file://`` URI or a path (the path), as the declarative
    configuration's ``output_stream`` and ``TRACEJUDGE_TRACES_FILE`` are written."""
    value = value.strip()
    if value in ("", STDOUT):
        return None
    return value.removeprefix("file://")


class OtlpFileSpanExporter(SpanExporter):
    """Appends each batch of spans to ``path`` (None: stdout) as one OTLP/JSON line.

    The file is opened at once: a path that cannot be written raises ``OSError`` here, not
    in a background thread later. Use it with a ``BatchSpanProcessor``.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = None if path is None else Path(path)
        self._out: TextIO = (
            sys.stdout if self.path is None else self.path.open("a", encoding="utf-8")
        )
        self._lock = threading.Lock()
        self._warned = False
        self._closed = False
        self.failed = 0
        """Spans whose line could not be written."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write the batch as one line and flush it (a reader sees whole lines)."""
        if not spans:
            return SpanExportResult.SUCCESS
        from tracejudge.otlp.json_encode import spans_to_otlp_json

        try:
            doc = spans_to_otlp_json(spans)
            line = json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"
            with self._lock:
                if self._closed:
                    raise ValueError("the exporter was shut down")
                self._out.write(line)
                self._out.flush()
        except Exception as exc:  # telemetry must not raise into the application
            with self._lock:
                self.failed += len(spans)
                warn = not self._warned
                self._warned = True
            if warn:
                log.warning(
                    "tracejudge: cannot write spans to %s (%s); they are not kept",
                    self.path or STDOUT,
                    exc,
                )
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Lines are flushed as they are written."""
        return True

    def shutdown(self) -> None:
        """Close the file (stdout stays open)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.path is not None:
                self._out.close()
