"""The exporter ``instrument()`` sets up: the OTLP exporter, minus the stall when nobody listens.

With no collector running, the SDK's OTLP exporter retries each batch with back-off for up
to its timeout and logs every attempt; at exit that blocks the user's process for about
eight seconds of connection-refused lines, for spans nobody can receive. A down backend is
the normal state of a developer's laptop, so telemetry has to shrug it off.

The guard keeps the exporter's retries for a backend that is there (a collector restarting
behind a listening port keeps its at-least-once delivery) and skips them for one that is
not: while the endpoint is not known to be up, each batch first tries one short TCP
connect, and a refused or timed-out connect drops the batch at once, counted, with one
warning for the whole outage. A failed export marks the endpoint unknown again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracejudge.instrumentation._endpoint import OtlpEndpoint, listening

log = logging.getLogger("tracejudge")


class UnreachableGuard(SpanExporter):
    """Wraps the OTLP exporter; see the module docstring."""

    def __init__(
        self, inner: SpanExporter, endpoint: OtlpEndpoint, probe_timeout: float = 0.3
    ) -> None:
        self.inner = inner
        self.endpoint = endpoint
        self.probe_timeout = probe_timeout
        self.up = False
        self.dropped = 0
        """Spans dropped because nothing listened (``export`` returned FAILURE for them)."""
        self._warned = False
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Probe first unless the endpoint is known to be up; then the real export."""
        if not self.up:
            if not listening(self.endpoint, self.probe_timeout):
                with self._lock:
                    self.dropped += len(spans)
                    warn = not self._warned
                    self._warned = True
                if warn:
                    log.warning(
                        "tracejudge: nothing listens at %s; spans are not exported until a "
                        "collector runs there (set OTEL_EXPORTER_OTLP_ENDPOINT, or start "
                        "`tracejudge serve`)",
                        self.endpoint.url,
                    )
                return SpanExportResult.FAILURE
            self.up = True
            self._warned = False
        result = self.inner.export(spans)
        if result is not SpanExportResult.SUCCESS:
            self.up = False
        return result

    def shutdown(self) -> None:
        """Shut the wrapped exporter down."""
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the wrapped exporter."""
        return self.inner.force_flush(timeout_millis)
