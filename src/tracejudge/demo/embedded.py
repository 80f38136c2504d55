"""The real tracejudge collector, run in-process on a background event loop.

``tracejudge demo`` must show the production path (OTLP export → collector → judge →
stamp → forward), not a shortcut, yet stay one synchronous command. This wrapper runs
``tracejudge.collector.Collector`` on its own asyncio loop in a daemon thread, on
ephemeral loopback ports, and collects the verdict records it emits through a
``VerdictSink`` so the caller can wait for exactly the runs it started.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

from tracejudge.collector import Collector, CollectorConfig, Judge


class _Verdicts:
    """A ``VerdictSink`` that keeps every record and wakes waiters."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self._changed = threading.Condition()

    def emit(self, records: Sequence[dict[str, Any]]) -> None:
        with self._changed:
            self.records.extend(records)
            self._changed.notify_all()

    async def close(self) -> None:
        return None

    def wait_for(self, trace_ids: set[str], timeout: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not trace_ids <= {r.get("trace_id") for r in self.records}:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            return [r for r in self.records if r.get("trace_id") in trace_ids]


class EmbeddedCollector:
    """A started collector on a background loop; ``close()`` stops it gracefully."""

    def __init__(self, config: CollectorConfig, judge: Judge | None = None) -> None:
        config.host = "127.0.0.1"
        config.grpc_port = 0
        config.http_port = 0
        self._sink = _Verdicts()
        self._collector = Collector(config, judge, sinks=[self._sink])
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="tracejudge-embedded-collector", daemon=True
        )
        self._closed = False

    def start(self, timeout: float = 10.0) -> EmbeddedCollector:
        """Bind the receivers; raises what the collector raised if it cannot start."""
        self._thread.start()
        try:
            starting = self._collector.start()
            asyncio.run_coroutine_threadsafe(starting, self._loop).result(timeout)
        except BaseException:
            self.close(timeout=1.0)
            raise
        return self

    @property
    def otlp_http_traces_url(self) -> str:
        """Where an OTLP/HTTP span exporter sends to reach this collector."""
        return f"http://127.0.0.1:{self._collector.http_port}/v1/traces"

    @property
    def otlp_grpc_endpoint(self) -> str:
        """Where an OTLP/gRPC span exporter sends to reach this collector."""
        return f"127.0.0.1:{self._collector.grpc_port}"

    def verdicts(self, trace_ids: set[str], timeout: float = 10.0) -> list[dict[str, Any]]:
        """The verdict records of these traces, waiting up to ``timeout`` seconds for them."""
        return self._sink.wait_for(trace_ids, timeout)

    def snapshot(self) -> dict[str, Any]:
        """The collector's counters (spans received, forwarded, queued...)."""
        return self._collector.snapshot()

    def close(self, timeout: float = 10.0) -> None:
        """Decide what is pending, flush forwarding, stop the loop; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._thread.is_alive():
                stop = self._collector.stop(timeout=timeout)
                asyncio.run_coroutine_threadsafe(stop, self._loop).result(timeout + 5)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()

    def __enter__(self) -> EmbeddedCollector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
