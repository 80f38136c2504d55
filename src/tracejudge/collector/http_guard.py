"""Connection limits for the OTLP/HTTP receiver: idle and header deadlines, and a cap on
connections per client.

aiohttp has no header timeout, so a client that opens connections and sends a request
head a byte at a time (slowloris) holds each one for as long as it likes. Every
connection therefore goes through ``ConnectionGuard``, a thin protocol in front of
aiohttp's own: a connection must start a request within ``idle_timeout`` (after it
opens or after its previous response) and finish the request head within
``header_timeout`` of its first byte, or it is aborted. Body deadlines are the handler's
(``read_body``). Clients beyond ``max_per_client`` concurrent connections from one
address are refused at once. Everything is counted in ``GuardStats``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

log = logging.getLogger("tracejudge.collector")

_END_OF_HEAD = b"\r\n\r\n"
_CONTINUE = b"HTTP/1.1 100"
_LOG_EVERY = 10.0


@dataclass(slots=True)
class GuardLimits:
    """The receiver's connection limits (seconds; ``max_per_client`` connections)."""

    idle_timeout: float
    header_timeout: float
    max_per_client: int


@dataclass(slots=True)
class GuardStats:
    """Connections the guard closed, shared by every connection of one listener."""

    timed_out: int = 0
    refused: int = 0
    clients: dict[str, int] = field(default_factory=dict)
    logged_at: float = -_LOG_EVERY


class _WriteWatch:
    """The transport as aiohttp sees it: a response being written ends the request (the
    idle deadline starts again); everything else is the real transport's."""

    def __init__(self, transport: asyncio.Transport, on_response: Callable[[], None]) -> None:
        self._transport = transport
        self._on_response = on_response

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if bytes(data[: len(_CONTINUE)]) != _CONTINUE:  # "100 Continue" is not the answer
            self._on_response()
        self._transport.write(data)

    def writelines(self, lines: Any) -> None:
        lines = list(lines)
        if lines and bytes(lines[0][: len(_CONTINUE)]) != _CONTINUE:
            self._on_response()
        self._transport.writelines(lines)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class ConnectionGuard(asyncio.Protocol):
    """Wraps aiohttp's protocol for one connection and enforces ``GuardLimits``."""

    def __init__(self, inner: asyncio.Protocol, limits: GuardLimits, stats: GuardStats) -> None:
        self.inner = inner
        self.limits = limits
        self.stats = stats
        self.transport: asyncio.Transport | None = None
        self.client = ""
        self.refused = False
        self.in_head = False
        """Bytes of a request head have arrived, its end has not."""
        self.in_request = False
        """The head is complete and no response has been written yet."""
        self._tail = b""
        self._timer: asyncio.TimerHandle | None = None

    # --- asyncio.Protocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Count the client; refuse it beyond its cap; start the idle deadline."""
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.client = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        open_now = self.stats.clients.get(self.client, 0)
        if open_now >= self.limits.max_per_client:
            self.refused = True
            self.stats.refused += 1
            self._log(f"refused a connection from {self.client}: {open_now} already open")
            transport.abort()
            return
        self.stats.clients[self.client] = open_now + 1
        self.inner.connection_made(_WriteWatch(transport, self._responded))  # type: ignore[arg-type]
        self._arm(self.limits.idle_timeout)

    def data_received(self, data: bytes) -> None:
        """Track the request head; hand the bytes on."""
        if self.refused:
            return
        if not self.in_request:
            if not self.in_head:
                self.in_head = True
                self._arm(self.limits.header_timeout)
            window = self._tail + data
            if _END_OF_HEAD in window:
                self.in_head = False
                self.in_request = True
                self._tail = b""
                self._disarm()
            else:
                self._tail = window[-3:]
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        """Hand on."""
        if self.refused:
            return None
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        """Uncount the client and hand on."""
        self._disarm()
        if self.refused:
            return
        left = self.stats.clients.get(self.client, 1) - 1
        if left > 0:
            self.stats.clients[self.client] = left
        else:
            self.stats.clients.pop(self.client, None)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        """Hand on."""
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        """Hand on."""
        self.inner.resume_writing()

    # --- deadlines ----------------------------------------------------------------------

    def _responded(self) -> None:
        if self.in_request:
            self.in_request = False
            self._arm(self.limits.idle_timeout)

    def _arm(self, seconds: float) -> None:
        self._disarm()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self.in_request or self.transport is None:
            return
        self.stats.timed_out += 1
        what = "request head not finished" if self.in_head else "idle"
        self._log(f"closed a connection from {self.client}: {what} in time")
        self.transport.abort()

    def _log(self, message: str) -> None:
        now = time.monotonic()
        if now - self.stats.logged_at >= _LOG_EVERY:
            self.stats.logged_at = now
            log.warning(
                "OTLP/HTTP: %s (timed out so far: %d, refused: %d)",
                message,
                self.stats.timed_out,
                self.stats.refused,
            )


class HttpServer:
    """An aiohttp app served through ``ConnectionGuard``: the runner handles requests, our
    own listening socket wraps each connection."""

    def __init__(self, runner: web.AppRunner, server: asyncio.AbstractServer, port: int) -> None:
        self.runner = runner
        self.server = server
        self.port = port

    async def cleanup(self) -> None:
        """Stop accepting, then let aiohttp finish and close the open connections."""
        self.server.close()
        await self.runner.cleanup()


async def start_guarded(
    app: web.Application,
    host: str,
    port: int,
    limits: GuardLimits,
    stats: GuardStats,
    what: str = "OTLP/HTTP",
    ssl_context: ssl.SSLContext | None = None,
) -> HttpServer:
    """Serve ``app`` on ``host:port`` (0 picks a free port) behind the guard; ``what``
    names the listener in a bind error. With ``ssl_context`` the port speaks TLS only
    (the guard sees the decrypted bytes; the handshake must finish within the header
    timeout)."""
    # auto_decompress off: we inflate gzip ourselves with a running cap and clear 400s.
    runner = web.AppRunner(
        app,
        access_log=None,
        handle_signals=False,
        auto_decompress=False,
        # The guard closes idle connections itself; aiohttp's own keep-alive close is a
        # backstop set later, so the guard's counts are the whole story.
        keepalive_timeout=limits.idle_timeout + limits.header_timeout + 1.0,
    )
    await runner.setup()
    handler = runner.server
    assert handler is not None
    loop = asyncio.get_running_loop()
    try:
        server = await loop.create_server(
            lambda: ConnectionGuard(handler(), limits, stats),
            host,
            port,
            reuse_address=True,
            ssl=ssl_context,
            ssl_handshake_timeout=limits.header_timeout if ssl_context is not None else None,
        )
    except OSError as exc:
        await runner.cleanup()
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise OSError(f"cannot bind {what} on {host}:{port}: {reason}") from exc
    bound = int(server.sockets[0].getsockname()[1])
    return HttpServer(runner, server, bound)
