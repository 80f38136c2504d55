"""Forwarding stamped traces to backends: targets, retries, and a bounded queue per target.

Each target has its own queue and worker, so one slow or dead backend never holds up the
others. Payloads are framed ``ResourceSpans`` bytes; a batch is their concatenation, which
is itself a valid ``ExportTraceServiceRequest``, so nothing is re-encoded here. Retries
follow the OTLP rules: only throttling and transient errors are retried, with exponential
backoff, jitter and the server's Retry-After / RetryInfo; permanent errors are counted and
dropped (retrying a 400 forever would wedge the queue), or written to the dead-letter file
when one is configured (``dead_letter.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import aiohttp
import grpc
import grpc.aio

from tracejudge.collector.codec.otlp import retry_delay_from_status
from tracejudge.collector.component import Lifecycle
from tracejudge.collector.exporters.exporter import TargetExporter
from tracejudge.collector.security.credentials import display_url
from tracejudge.collector.security.tls import TargetOptions
from tracejudge.collector.storage.store import DiskStore
from tracejudge.collector.telemetry.stats import Stats

if TYPE_CHECKING:
    from tracejudge.collector.config import CollectorConfig

log = logging.getLogger("tracejudge.collector")

_EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
_AUTH_HINT = " (the backend refused our credentials: check forward_headers / --forward-header)"
_ERROR_CHARS = 240
"""Characters of a failure kept in ``last_error`` (the dead-letter file keeps 1,000)."""
_RETRYABLE_HTTP = frozenset({429, 502, 503, 504})
_RETRYABLE_GRPC = frozenset(
    {
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)


class RetryableError(Exception):
    """The send failed but may succeed later; ``delay`` is the server's hint, if any."""

    def __init__(self, reason: str, delay: float | None = None) -> None:
        super().__init__(reason)
        self.delay = delay


class PermanentError(Exception):
    """The target refused the data for good (e.g. 400); retrying cannot help.

    ``status`` is the answer (``HTTP 400``, ``gRPC INVALID_ARGUMENT``), ``reason`` the
    backend's text (its body or status details), both kept for the dead-letter file."""

    def __init__(self, status: str, reason: str = "") -> None:
        # Logs get the first 200 characters; /metrics' last_error is scrubbed whole, then cut.
        super().__init__(f"{status}: {reason[:200]}" if reason else status)
        self.status = status
        self.reason = reason


class DeadLetter(Protocol):
    """Where refused batches go (``DeadLetterFile``); ``write`` never raises."""

    async def write(
        self, name: str, url: str, status: str, reason: str, payload: bytes, spans: int
    ) -> bool:
        """Keep one refused batch; False when it could not be kept (then it is dropped)."""
        ...


class ForwardTarget(Protocol):
    """A backend that accepts an OTLP ``ExportTraceServiceRequest`` as bytes."""

    url: str
    """The target's name in metrics, logs and the disk queue: the URL without credentials."""

    async def send(self, payload: bytes) -> None:
        """Deliver ``payload``; raise ``RetryableError`` or ``PermanentError`` on failure."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class HttpTarget(TargetExporter):
    """OTLP/HTTP protobuf: ``POST {url}/v1/traces`` (the path is added when the URL has none).

    ``https://`` verifies the backend with the options' CA (or the system store); the
    options' headers (an ``api-key``, an ``Authorization``) go with every request, and
    user info in the URL is sent as basic auth."""

    signal_path = "/v1/traces"
    """The path added to a URL without one (``logs_forward.py`` sends ``/v1/logs``)."""

    def __init__(self, url: str, timeout: float, options: TargetOptions | None = None) -> None:
        self.url = display_url(url)
        self.state = Lifecycle(self.url, "exporter")
        opts = TargetOptions() if options is None else options
        parts = urlsplit(url)
        self._endpoint = url if parts.path not in ("", "/") else url.rstrip("/") + self.signal_path
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self._headers = {
            **opts.resolved_headers(f"forward {self.url}"),
            "Content-Type": "application/x-protobuf",
        }
        self._ssl = opts.tls.ssl_context(f"forward {self.url}") if parts.scheme == "https" else None

    async def send(self, payload: bytes) -> None:
        """POST the payload; map the answer onto retryable / permanent per the OTLP spec."""
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        headers = self._headers
        try:
            async with self._session.post(
                self._endpoint, data=payload, headers=headers, ssl=self._ssl or True
            ) as resp:
                body = await resp.read()
                if 200 <= resp.status < 300:
                    return
                if resp.status in _RETRYABLE_HTTP:
                    raise RetryableError(
                        f"HTTP {resp.status}", _retry_after(resp.headers.get("Retry-After"))
                    )
                hint = _AUTH_HINT if resp.status in (401, 403) else ""
                reason = body[:1000].decode("utf-8", "replace")
                raise PermanentError(f"HTTP {resp.status}{hint}", reason)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            # aiohttp's messages quote the URL, credentials and all.
            reason = str(exc).replace(self._endpoint, display_url(self._endpoint))
            raise RetryableError(f"{type(exc).__name__}: {reason}") from exc

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


class GrpcTarget(TargetExporter):
    """OTLP/gRPC via a raw unary call, so the payload bytes are sent as they are.

    ``grpcs://`` uses TLS (the options' CA or the system store, a client certificate for
    mutual TLS); the options' headers go as call metadata (names lower-cased, as gRPC
    requires)."""

    export_method = _EXPORT_METHOD
    """The Export method called (``logs_forward.py`` calls ``LogsService/Export``)."""

    def __init__(self, url: str, timeout: float, options: TargetOptions | None = None) -> None:
        self.url = display_url(url)
        self.state = Lifecycle(self.url, "exporter")
        opts = TargetOptions() if options is None else options
        parts = urlsplit(url)
        self._address = f"{parts.hostname}:{parts.port}"
        self._timeout = timeout
        self._channel: grpc.aio.Channel | None = None
        self._call: Callable[..., object] | None = None
        headers = opts.resolved_headers(f"forward {self.url}")
        self._metadata = tuple((k.lower(), v) for k, v in headers.items())
        self._credentials = opts.tls.grpc_credentials() if parts.scheme == "grpcs" else None

    async def send(self, payload: bytes) -> None:
        """Call Export; UNAVAILABLE etc. are retryable, RESOURCE_EXHAUSTED only with RetryInfo."""
        if self._channel is None:
            if self._credentials is not None:
                self._channel = grpc.aio.secure_channel(self._address, self._credentials)
            else:
                self._channel = grpc.aio.insecure_channel(self._address)
            self._call = self._channel.unary_unary(self.export_method, None, None)
        assert self._call is not None
        try:
            await self._call(  # type: ignore[misc]
                payload, timeout=self._timeout, metadata=self._metadata or None
            )
        except grpc.aio.AioRpcError as exc:
            delay = None
            for md in exc.trailing_metadata() or ():
                key, value = md[0], md[1]  # type: ignore[index]
                if key == "grpc-status-details-bin" and isinstance(value, bytes):
                    delay = retry_delay_from_status(value)
            code = exc.code()
            if code in _RETRYABLE_GRPC or (
                code == grpc.StatusCode.RESOURCE_EXHAUSTED and delay is not None
            ):
                raise RetryableError(f"gRPC {code.name}: {exc.details()}", delay) from exc
            auth = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
            hint = _AUTH_HINT if code in auth else ""
            raise PermanentError(f"gRPC {code.name}{hint}", exc.details() or "") from exc

    async def close(self) -> None:
        """Close the channel."""
        if self._channel is not None:
            await self._channel.close(None)
            self._channel = None


def make_target(url: str, timeout: float, options: TargetOptions | None = None) -> ForwardTarget:
    """The target for a configured forward URL, with its headers and TLS options."""
    if urlsplit(url).scheme in ("grpc", "grpcs"):
        return GrpcTarget(url, timeout, options)
    return HttpTarget(url, timeout, options)


@dataclass(frozen=True)
class OtlpExporterConfig:
    """An OTLP target's own settings."""

    url: str = ""
    timeout: float = 10.0
    """Seconds per export call (``forward_timeout``)."""
    options: TargetOptions | None = None
    """Its headers and TLS (``forward_headers``, ``forward_ca_file``, a per-target entry)."""


class _OtlpFactory:
    """What the two OTLP kinds share: their config and how it is filled in."""

    kind: str
    schemes: tuple[str, ...]
    url_forms: tuple[str, ...]

    def check_url(self, url: str) -> None:
        """``scheme://host:port[/path]``; gRPC needs its port."""
        parts = urlsplit(url)
        if not parts.hostname:
            raise ValueError(f"needs a host: {self.schemes[0]}://host:port")
        try:
            port = parts.port
        except ValueError:
            raise ValueError("has a bad port") from None
        if self.kind == "otlp_grpc" and port is None:
            raise ValueError("needs a port")

    def default_config(self) -> OtlpExporterConfig:
        """No URL, the default timeout, no headers or TLS options."""
        return OtlpExporterConfig()

    def config_for(self, url: str, config: CollectorConfig) -> OtlpExporterConfig:
        """The URL with ``forward_timeout`` and the target's options."""
        return replace(
            self.default_config(),
            url=url,
            timeout=config.forward_timeout,
            options=config.target_options(url),
        )


class OtlpHttpFactory(_OtlpFactory):
    """``otlp_http``: OTLP/HTTP protobuf to ``http(s)://`` targets."""

    kind = "otlp_http"
    schemes = ("http", "https")
    url_forms = ("http://host:port", "https://host:port")

    def create(self, config: OtlpExporterConfig) -> HttpTarget:
        """An ``HttpTarget``."""
        return HttpTarget(config.url, config.timeout, config.options)


class OtlpGrpcFactory(_OtlpFactory):
    """``otlp_grpc``: OTLP/gRPC to ``grpc(s)://`` targets."""

    kind = "otlp_grpc"
    schemes = ("grpc", "grpcs")
    url_forms = ("grpc://host:port", "grpcs://host:port")

    def create(self, config: OtlpExporterConfig) -> GrpcTarget:
        """A ``GrpcTarget``."""
        return GrpcTarget(config.url, config.timeout, config.options)


class Release:
    """Frees decided traces' inbox rows once every target has their payloads.

    Used only when the disk refused the decision's inbox-to-outbox commit: the payloads
    then travel in memory, and the inbox rows (still durable) are what a crash replays
    until the last copy is acknowledged or refused for good."""

    __slots__ = ("pending", "store", "trace_ids")

    def __init__(self, store: DiskStore, trace_ids: list[bytes], pending: int) -> None:
        self.store = store
        self.trace_ids = trace_ids
        self.pending = pending

    def done(self) -> None:
        """One copy is settled; the last one releases the rows."""
        self.pending -= 1
        if self.pending == 0:
            self.store.release_inbox(self.trace_ids)


@dataclass(slots=True)
class Item:
    """One payload waiting to be forwarded."""

    payload: bytes
    spans: int
    traces: int
    ready_at: float | None
    """Loop time the trace was finished (for decision latency); None for pass-through data."""
    row_id: int | None = None
    release: Release | None = None


class TargetQueue:
    """A bounded queue and its worker for one target.

    ``name`` is the target's stable identity (``targets.py``): the disk queue binds its
    rows to it, so they follow the target when its URL changes."""

    def __init__(
        self,
        target: ForwardTarget,
        *,
        stats: Stats,
        store: DiskStore | None,
        max_batch_bytes: int,
        retry_initial: float,
        retry_max: float,
        name: str | None = None,
        dead_letter: DeadLetter | None = None,
        scrub: Callable[[str], str] | None = None,
    ) -> None:
        self.target = target
        self.scrub: Callable[[str], str] = (lambda s: s) if scrub is None else scrub
        """Scrubs ``last_error`` (a backend's answer may quote a secret): the collector
        gives it its scrubber's ``text``, the one its logs and the dead-letter reason get."""
        self.name = target.url if name is None else name
        self.dead_letter = dead_letter
        self.dead_lettered = 0
        """Spans this target refused that went to the dead-letter file."""
        self.dead_lettered_batches = 0
        self.stats = stats
        self.store = store
        self.max_batch_bytes = max_batch_bytes
        self.retry_initial = retry_initial
        self.retry_max = retry_max
        self.items: deque[Item] = deque()
        self.nbytes = 0
        self.spans = 0
        self.failures = 0
        self.restarts = 0
        """Times the worker crashed (a bug) and was restarted."""
        self.peak_bytes = 0
        """The most bytes ever queued (``max_queue_bytes`` holds when this stays below)."""
        self.last_error: str | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    def put(self, item: Item) -> None:
        """Enqueue without blocking (admission control happens at the receivers)."""
        self.items.append(item)
        self.nbytes += len(item.payload)
        self.spans += item.spans
        if self.nbytes > self.peak_bytes:
            self.peak_bytes = self.nbytes
        self._wake.set()

    def start(self) -> None:
        """Start the worker task."""
        self._task = asyncio.get_running_loop().create_task(self._supervise())

    async def _supervise(self) -> None:
        """Run the worker; if it ever crashes (a bug: send errors are handled inside), log
        it and start it again. Queued items stay queued (they leave only once settled), so
        a crash costs a resend at most, never the queue."""
        while True:
            try:
                await self._run()
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.restarts += 1
                self._failed(f"worker crashed: {type(exc).__name__}: {exc}")
                log.exception("forward worker for %s crashed; restarting it", self.target.url)
                await asyncio.sleep(self.retry_initial)

    def _failed(self, status: str, reason: str = "") -> None:
        """Keep the latest failure for ``/metrics``, scrubbed before it is cut short (a
        secret cut in half would no longer be recognised)."""
        text = self.scrub(f"{status}: {reason}" if reason else status)
        self.last_error = text if len(text) <= _ERROR_CHARS else text[:_ERROR_CHARS] + "..."

    def _take_batch(self) -> list[Item]:
        batch: list[Item] = []
        size = 0
        for item in self.items:
            if batch and size + len(item.payload) > self.max_batch_bytes:
                break
            batch.append(item)
            size += len(item.payload)
        return batch

    def _done(self, batch: list[Item], state: str) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        for _ in batch:
            item = self.items.popleft()
            self.nbytes -= len(item.payload)
            self.spans -= item.spans
            if item.ready_at is not None and state == "forwarded":
                self.stats.latency(max(0.0, now - item.ready_at))
            if item.release is not None:
                item.release.done()
        self.stats.count(state, sum(i.spans for i in batch))
        if self.store is not None:
            ids = [i.row_id for i in batch if i.row_id is not None]
            if ids:
                self.store.delete_outbox(ids)

    async def _run(self) -> None:
        attempt = 0
        while True:
            if not self.items:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            batch = self._take_batch()
            payload = b"".join(i.payload for i in batch)
            try:
                await self.target.send(payload)
            except RetryableError as exc:
                attempt += 1
                self.failures += 1
                self._failed(str(exc))
                backoff = min(self.retry_max, self.retry_initial * 2 ** min(attempt - 1, 16))
                delay = exc.delay if exc.delay is not None else backoff * random.uniform(0.5, 1.0)
                log.warning(
                    "forward to %s failed (%s); retry %d in %.2fs",
                    self.target.url,
                    exc,
                    attempt,
                    delay,
                )
                await asyncio.sleep(min(delay, self.retry_max))
                continue
            except PermanentError as exc:
                self._failed(exc.status, exc.reason)
                await self._refused(batch, payload, exc)
                attempt = 0
                continue
            except Exception as exc:  # a bug in a target must not kill the worker
                log.exception("forward to %s crashed; retrying", self.target.url)
                self._failed(repr(exc))
                await asyncio.sleep(self.retry_initial)
                continue
            attempt = 0
            self.last_error = None
            self._done(batch, "forwarded")

    async def _refused(self, batch: list[Item], payload: bytes, exc: PermanentError) -> None:
        """A permanent refusal: to the dead-letter file when there is one (then the rows
        are forgotten), else, or when it cannot be written, dropped and counted."""
        spans = sum(i.spans for i in batch)
        kept = self.dead_letter is not None and await self.dead_letter.write(
            self.name, self.target.url, exc.status, exc.reason, payload, spans
        )
        where = "written to the dead-letter file" if kept else "dropped"
        log.error(
            "forward to %s refused %d spans permanently (%s): %s",
            self.target.url,
            spans,
            where,
            exc,
        )
        if kept:
            self.dead_lettered += spans
            self.dead_lettered_batches += 1
        self._done(batch, "dead_lettered" if kept else "dropped")

    def snapshot(self) -> dict[str, Any]:
        """Its entry under ``/metrics`` ``targets`` (keyed by its URL): queue and failures."""
        return {
            "name": self.name,
            "queued_spans": self.spans,
            "queued_bytes": self.nbytes,
            "peak_bytes": self.peak_bytes,
            "failures": self.failures,
            "worker_restarts": self.restarts,
            "dead_lettered": self.dead_lettered,
            "dead_lettered_batches": self.dead_lettered_batches,
            "last_error": self.last_error,
        }

    async def flush(self, timeout: float) -> bool:
        """Stop after the queue drains or ``timeout`` passes; True when it drained."""
        self._closing = True
        self._wake.set()
        if self._task is None:
            return not self.items
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.target.close()
        return not self.items
