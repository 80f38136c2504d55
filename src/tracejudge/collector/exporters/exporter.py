"""The exporter contract: what every exporter is, and the factory that builds one.

The OpenTelemetry Collector's shape in Python: an exporter ``consume``s a batch (an OTLP
``ExportTraceServiceRequest`` as bytes, stamped and ready to send) between ``start`` and
``shutdown``; its factory has a ``kind``, the URL schemes it serves, a ``default_config()``
and builds the exporter from that config filled in from the collector's settings. The
registry (``registry.py``) maps kinds and schemes to factories, so adding an exporter is
one module (the exporter and its factory) plus one line there. Each exporter is wrapped by
one durable queue (``forward.TargetQueue``) through ``QueuedExporter``: batching, retries,
the disk queue and dead letters stay the queue's, not each exporter's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

from tracejudge.collector.component import Lifecycle

if TYPE_CHECKING:
    from tracejudge.collector.config import CollectorConfig

C = TypeVar("C")


class Exporter(Protocol):
    """One destination of judged traces."""

    url: str
    """Its name in metrics, logs and the disk queue: never with credentials."""

    async def start(self) -> None:
        """Get ready to consume (a file opened, a connection made); errors stop the start.
        A second call does nothing."""
        ...

    async def consume(self, payload: bytes) -> None:
        """Deliver one batch; raise ``RetryableError`` or ``PermanentError`` on failure,
        ``ComponentStopped`` after ``shutdown``."""
        ...

    async def shutdown(self) -> None:
        """Release what ``start`` and ``consume`` opened; a second call does nothing."""
        ...


class ExporterFactory(Protocol[C]):
    """Builds one kind of exporter from its own config (``C``, a frozen dataclass)."""

    @property
    def kind(self) -> str:
        """The kind's name (``otlp_http``, ``otlp_grpc``, ``file``)."""
        ...

    @property
    def schemes(self) -> tuple[str, ...]:
        """The URL schemes whose targets this kind serves (``file`` for ``file:PATH``)."""
        ...

    @property
    def url_forms(self) -> tuple[str, ...]:
        """How its URLs look, for error messages (``grpc://host:port``, ``file:PATH``)."""
        ...

    def check_url(self, url: str) -> None:
        """Raise ``ValueError`` saying what is wrong with a target URL of this kind (checked
        when the config is validated, before anything starts)."""
        ...

    def default_config(self) -> C:
        """The kind's config with every default filled in."""
        ...

    def config_for(self, url: str, config: CollectorConfig) -> C:
        """``default_config()`` with the target's URL and the collector's settings."""
        ...

    def create(self, config: C) -> Exporter:
        """A new exporter for ``config``."""
        ...


class TargetExporter:
    """The ``Exporter`` contract over a target's ``send`` and ``close`` (the forward
    queue's names), written once for every kind: ``start`` and ``shutdown`` idempotent,
    ``consume`` after ``shutdown`` refused (``ComponentStopped``) rather than reopening
    what ``shutdown`` closed. A kind sets ``state`` (a ``Lifecycle``) in its constructor."""

    url: str
    state: Lifecycle

    async def start(self) -> None:
        """Nothing to open here: a kind opens in its constructor (a file) or on the first
        export (a connection)."""
        self.state.start()

    async def consume(self, payload: bytes) -> None:
        """Deliver one batch (``send``)."""
        self.state.check()
        await self.send(payload)

    async def shutdown(self) -> None:
        """Release what ``send`` opened (``close``), once."""
        if self.state.shutdown():
            await self.close()

    async def send(self, payload: bytes) -> None:
        """Deliver ``payload`` (the kind's)."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release connections (the kind's)."""
        raise NotImplementedError


class QueuedExporter:
    """An exporter as the forward queue's target (``forward.ForwardTarget``)."""

    def __init__(self, exporter: Exporter) -> None:
        self.exporter = exporter
        self.url = exporter.url

    async def send(self, payload: bytes) -> None:
        """One batch, to the exporter."""
        await self.exporter.consume(payload)

    async def close(self) -> None:
        """Shut the exporter down."""
        await self.exporter.shutdown()
