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

Under TLS the guard takes the connection at TCP accept and runs the handshake itself
(``loop.start_tls``): a server socket created with an SSL context hands the protocol its
connection only once the handshake is done, so connections that never finish one were
not counted, and one client could hold any number of them until each timed out.
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

from tracejudge.collector.clock import Clock, SystemClock, Timer

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
    tls_failed: int = 0
    """TLS handshakes that failed or did not finish within the header timeout."""
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

    def __init__(
        self,
        inner: asyncio.Protocol,
        limits: GuardLimits,
        stats: GuardStats,
        tls: ssl.SSLContext | None = None,
        handshakes: set[asyncio.Task[None]] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.inner = inner
        self.clock: Clock = SystemClock() if clock is None else clock
        """The idle and header deadlines run on it (a test's ``ManualClock``)."""
        self.limits = limits
        self.stats = stats
        self.tls = tls
        self.handshakes: set[asyncio.Task[None]] = set() if handshakes is None else handshakes
        """The listener's handshakes in progress (cancelled when it stops)."""
        self.transport: asyncio.Transport | None = None
        self.client = ""
        self.refused = False
        self.counted = False
        """This connection counts against its client's cap (until it is lost)."""
        self.handed_on = False
        """aiohttp's protocol has the connection (after the TLS handshake, if any)."""
        self._early: list[bytes] = []
        """Decrypted bytes that arrived before ``start_tls`` returned (a request sent
        with the handshake's last message), handed on with the connection."""
        self._early_eof = False
        self.in_head = False
        """Bytes of a request head have arrived, its end has not."""
        self.in_request = False
        """The head is complete and no response has been written yet."""
        self._tail = b""
        self._timer: Timer | None = None

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
        self.counted = True
        if self.tls is None:
            self._hand_on(transport)
            return
        task = asyncio.get_running_loop().create_task(self._handshake(transport, self.tls))
        self.handshakes.add(task)
        task.add_done_callback(self.handshakes.discard)

    async def _handshake(self, raw: asyncio.Transport, context: ssl.SSLContext) -> None:
        """Run the TLS handshake within the header timeout, then hand the connection on
        (``start_tls`` makes this guard the protocol behind the TLS layer)."""
        loop = asyncio.get_running_loop()
        try:
            tls = await loop.start_tls(
                raw,
                self,
                context,
                server_side=True,
                ssl_handshake_timeout=self.limits.header_timeout,
            )
        except asyncio.CancelledError:
            raw.abort()
            self._uncount()
            raise
        except Exception as exc:  # a failed or timed-out handshake, a reset
            raw.abort()
            self._uncount()
            self.stats.tls_failed += 1
            self._log(f"TLS handshake with {self.client} failed ({type(exc).__name__})")
            return
        if not self.counted or tls is None:  # lost during the handshake
            return
        self._hand_on(tls)

    def _hand_on(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.handed_on = True
        self.inner.connection_made(_WriteWatch(transport, self._responded))  # type: ignore[arg-type]
        self._arm(self.limits.idle_timeout)
        early, self._early = self._early, []
        for data in early:
            self.data_received(data)
        if self._early_eof:
            self.inner.eof_received()

    def _uncount(self) -> None:
        """Give the client's slot back (once, however the connection ended)."""
        if not self.counted:
            return
        self.counted = False
        left = self.stats.clients.get(self.client, 1) - 1
        if left > 0:
            self.stats.clients[self.client] = left
        else:
            self.stats.clients.pop(self.client, None)

    def data_received(self, data: bytes) -> None:
        """Track the request head; hand the bytes on."""
        if self.refused:
            return
        if not self.handed_on:
            self._early.append(data)
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
        if not self.handed_on:
            self._early_eof = True  # handed on after the bytes that came before it
            return None
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        """Uncount the client and hand on."""
        self._disarm()
        if self.refused:
            return
        self._uncount()
        if self.handed_on:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        """Hand on."""
        if self.handed_on:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        """Hand on."""
        if self.handed_on:
            self.inner.resume_writing()

    # --- deadlines ----------------------------------------------------------------------

    def _responded(self) -> None:
        if self.in_request:
            self.in_request = False
            self._arm(self.limits.idle_timeout)

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = self.clock.call_later(seconds, self._expired)

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

    def __init__(
        self,
        runner: web.AppRunner,
        server: asyncio.AbstractServer,
        port: int,
        handshakes: set[asyncio.Task[None]] | None = None,
    ) -> None:
        self.runner = runner
        self.server = server
        self.port = port
        self.handshakes: set[asyncio.Task[None]] = set() if handshakes is None else handshakes

    async def cleanup(self) -> None:
        """Stop accepting, drop handshakes in progress, then let aiohttp finish and close
        the open connections."""
        self.server.close()
        for task in list(self.handshakes):
            task.cancel()
        await asyncio.gather(*self.handshakes, return_exceptions=True)
        await self.runner.cleanup()


async def start_guarded(
    app: web.Application,
    host: str,
    port: int,
    limits: GuardLimits,
    stats: GuardStats,
    what: str = "OTLP/HTTP",
    ssl_context: ssl.SSLContext | None = None,
    logger: logging.Logger | None = None,
    clock: Clock | None = None,
) -> HttpServer:
    """Serve ``app`` on ``host:port`` (0 picks a free port) behind the guard; ``what``
    names the listener in a bind error. With ``ssl_context`` the port speaks TLS only:
    the guard counts each connection at TCP accept, then runs the handshake, which must
    finish within the header timeout, and sees the decrypted bytes. ``logger`` is what
    aiohttp logs its own errors to (``server_log.py``; its ``aiohttp.server`` otherwise)."""
    # auto_decompress off: we inflate gzip ourselves with a running cap and clear 400s.
    extra: dict[str, Any] = {} if logger is None else {"logger": logger}
    runner = web.AppRunner(
        app,
        **extra,
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
    handshakes: set[asyncio.Task[None]] = set()
    try:
        server = await loop.create_server(
            lambda: ConnectionGuard(handler(), limits, stats, ssl_context, handshakes, clock),
            host,
            port,
            reuse_address=True,
        )
    except OSError as exc:
        await runner.cleanup()
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise OSError(f"cannot bind {what} on {host}:{port}: {reason}") from exc
    bound = int(server.sockets[0].getsockname()[1])
    return HttpServer(runner, server, bound, handshakes)
