"""The grader calls' spans in ``tracejudge serve`` (``grader_traces``, off by default).

Each grader model call can be a GenAI ``chat`` span (``graders/telemetry.py``). In
``serve`` they are spans of the collector's own service, not of the agent runs it judges,
so by default none is made and the forwarded traces are exactly what the agents sent.
With ``grader_traces`` on, the grader calls get a tracer provider of their own (resource
``service.name = tracejudge``, as the collector's evaluation log records) whose exporter is
``GraderSpans``: each finished span is encoded as an OTLP ``ResourceSpans`` and put on
every ``forward`` queue, whose retries, TLS, headers and dead-letter file it shares.

- **Not to ``output``**: that file is what ``tracejudge eval`` reads again, and a trace
  with no agent span is judged as a run there (as a collector ``forward`` points at would).
- **Not judged, not in the disk queue**: the spans skip the trace buffer (they are not an
  agent's run) and travel in memory only, as log records do; a stop drops those not sent.
- **Never a wait**: a span a queue has no room for (``max_queue_bytes``) is dropped there
  and counted; the collector holds nothing back for it.
- **No content**: the graders are asked for none (the evidence is a rendering of the run
  the collector forwards under its own content settings), and each span's strings pass
  the collector's scrubber, as everything it writes does.

Spans end on the grader threads; they are encoded and queued on the event loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from tracejudge import __version__
from tracejudge import semconv as sc
from tracejudge.collector.codec.otlp import frame
from tracejudge.collector.exporters.forward import Item, TargetQueue
from tracejudge.collector.processors.redact import Scrubber
from tracejudge.graders.telemetry import judge_runtime
from tracejudge.instrumentation import Runtime

SERVICE = "tracejudge"
"""``service.name`` of the collector's own spans (and of its evaluation log records)."""


class GraderSpans(SpanExporter):
    """Puts finished grader spans on forward queues (see the module docstring)."""

    def __init__(
        self,
        queues: Sequence[TargetQueue],
        max_queue_bytes: int,
        scrubber: Scrubber,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.queues = list(queues)
        self.max_queue_bytes = max_queue_bytes
        self.scrubber = scrubber
        self.loop = loop
        self.spans = 0
        """Spans queued, counted once however many targets took them."""
        self.dropped = 0
        """Copies of spans a target's queue had no room for, or that ended after the stop."""
        self._lock = threading.Lock()
        self._closed = False
        provider = TracerProvider(
            resource=Resource({sc.SERVICE_NAME: SERVICE, "service.version": __version__})
        )
        provider.add_span_processor(SimpleSpanProcessor(self))
        self.runtime: Runtime = judge_runtime(provider, NoOpMeterProvider(), content=False)
        """What the grader calls are traced on: this provider, no content, no metrics."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Hand ``spans`` to the loop (any thread); never blocks."""
        try:
            if not self._closed:
                self.loop.call_soon_threadsafe(self._put, list(spans))
                return SpanExportResult.SUCCESS
        except RuntimeError:  # the loop is closed: the collector has stopped
            pass
        self._drop(len(spans) * len(self.queues))
        return SpanExportResult.FAILURE

    def _put(self, spans: list[ReadableSpan]) -> None:
        """Encode, scrub and queue (on the loop)."""
        if self._closed:
            self._drop(len(spans) * len(self.queues))
            return
        request = encode_spans(spans)
        parts = []
        for rs in request.resource_spans:
            self.scrubber.fragment(rs)
            for ss in rs.scope_spans:
                for span in ss.spans:
                    span.status.message = self.scrubber.text(span.status.message)
            parts.append(frame(rs.SerializeToString()))
        data = b"".join(parts)
        for q in self.queues:
            if q.nbytes and q.nbytes + len(data) > self.max_queue_bytes:
                self._drop(len(spans))
                continue
            q.put(Item(data, 0, 0, None))  # 0 spans: not spans a client sent
        self.spans += len(spans)

    def _drop(self, n: int) -> None:
        with self._lock:
            self.dropped += n

    def close(self) -> None:
        """Stop queueing: spans ending from now on are dropped and counted."""
        self._closed = True

    def shutdown(self) -> None:
        """The ``SpanExporter`` contract: as ``close``."""
        self.close()

    def snapshot(self) -> dict[str, Any]:
        """The ``traces`` entry of ``/metrics`` ``graders``."""
        with self._lock:
            dropped = self.dropped
        return {"spans": self.spans, "dropped": dropped}
