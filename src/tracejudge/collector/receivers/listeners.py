"""The collector's listeners, started and stopped together.

OTLP/gRPC (with the logs service when logs are received), OTLP/HTTP (``/v1/traces``, and
``/v1/logs``; with the HTTP API's routes unless a management listener serves them) and the
management listener when ``management_port`` is set. They share the bearer tokens, TLS,
the in-flight byte budget and the connection guard; what they admit goes to a
``TraceConsumer`` and a ``LogsConsumer``, never further.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracejudge.collector.clock import Clock
from tracejudge.collector.config import CollectorConfig
from tracejudge.collector.consumer import TraceConsumer
from tracejudge.collector.receivers.grpc_receiver import GrpcLimits, start_grpc
from tracejudge.collector.receivers.http_guard import (
    GuardLimits,
    GuardStats,
    HttpServer,
    start_guarded,
)
from tracejudge.collector.receivers.http_receiver import GateAnswer, management_app, receiver_app
from tracejudge.collector.receivers.inflight import InflightBytes
from tracejudge.collector.receivers.logs_receiver import (
    LogsConsumer,
    logs_grpc_handler,
    logs_http_handler,
)
from tracejudge.collector.security.auth import Authenticator, AuthStats

__all__ = ["Listeners"]


class Listeners:
    """Where one collector listens. ``await start(...)``; the ports are readable after."""

    def __init__(
        self,
        config: CollectorConfig,
        *,
        snapshot: Callable[[], dict[str, Any]],
        gate: GateAnswer,
        prometheus: Callable[[], str],
        auth_stats: AuthStats,
        inflight: InflightBytes,
        guard: GuardStats,
        clock: Clock,
    ) -> None:
        self.config = config
        self.metrics = snapshot
        """The whole collector's /metrics (and /healthz) body, served here."""
        self.gate = gate
        self.prometheus = prometheus
        self.auth_stats = auth_stats
        self.inflight = inflight
        self.guard = guard
        self.clock = clock
        self.grpc_port = 0
        self.http_port = 0
        self.management_port: int | None = None
        self._grpc: Any = None
        self._runners: list[HttpServer] = []
        """OTLP/HTTP first, then the management listener."""

    def snapshot(self) -> dict[str, Any]:
        """Their ``/metrics`` entries: request bytes being read, connections, tokens."""
        return {
            "inflight_request_bytes": {
                "bytes": self.inflight.nbytes,
                "max_bytes": self.inflight.limit,
                "refused": self.inflight.refused,
            },
            "http_connections": {
                "open": sum(self.guard.clients.values()),
                "timed_out": self.guard.timed_out,
                "refused": self.guard.refused,
                "tls_failed": self.guard.tls_failed,
            },
            "auth": self.auth_stats.to_dict(),
        }

    async def start(
        self, consumer: TraceConsumer, logs: LogsConsumer | None, server_log: logging.Logger
    ) -> None:
        """Start every listener; ``server_log`` is what aiohttp logs their errors to."""
        cfg = self.config
        grpc_limits = GrpcLimits(
            keepalive_time=cfg.grpc_keepalive_time,
            keepalive_timeout=cfg.grpc_keepalive_timeout,
            max_connection_idle=cfg.grpc_max_connection_idle,
            max_connection_age=cfg.grpc_max_connection_age,
            max_connection_age_grace=cfg.grpc_max_connection_age_grace,
            handshake_timeout=cfg.grpc_handshake_timeout,
            max_concurrent_streams=cfg.grpc_max_concurrent_streams,
            bdp_probe=cfg.grpc_bdp_probe,
        )
        auth = None
        if cfg.tokens_configured():
            watch = None if cfg.auth_token_file is None else Path(cfg.auth_token_file)
            auth = Authenticator(cfg.tokens(), self.auth_stats, watch=watch, reload=cfg.tokens)
        tls = cfg.server_tls()
        self._grpc, self.grpc_port = await start_grpc(
            consumer,
            cfg.host,
            cfg.grpc_port,
            cfg.max_request_bytes,
            grpc_limits,
            auth,
            None if tls is None else tls.grpc_credentials(),
            [logs_grpc_handler(logs, self.inflight, cfg.max_request_bytes, auth)]
            if logs is not None
            else [],
            budget=self.inflight,
        )
        ssl_context = None if tls is None else tls.ssl_context()
        limits = GuardLimits(
            idle_timeout=cfg.http_idle_timeout,
            header_timeout=cfg.http_header_timeout,
            max_per_client=cfg.http_max_connections_per_client,
        )
        # With a management listener the OTLP port serves spans only: it is the one exposed
        # to every agent, and the counts and the gate need not be reachable from there.
        app = receiver_app(
            consumer,
            cfg.max_request_bytes,
            self.metrics,
            cfg.http_body_timeout,
            self.gate,
            self.prometheus,
            auth=auth,
            management=cfg.management_port is None,
            inflight=self.inflight,
            clock=self.clock,
        )
        if logs is not None:
            handler = logs_http_handler(
                logs, cfg.max_request_bytes, cfg.http_body_timeout, self.clock
            )
            app.router.add_route("*", "/v1/logs", handler)
        server = await start_guarded(
            app,
            cfg.host,
            cfg.http_port,
            limits,
            self.guard,
            "OTLP/HTTP",
            ssl_context,
            server_log,
            self.clock,
        )
        self.http_port = server.port
        self._runners.append(server)
        if cfg.management_port is not None:
            server = await start_guarded(
                management_app(self.metrics, self.gate, self.prometheus, auth),
                cfg.management_host or cfg.host,
                cfg.management_port,
                limits,
                self.guard,
                "management",
                ssl_context,
                server_log,
                self.clock,
            )
            self.management_port = server.port
            self._runners.append(server)

    async def stop_intake(self, grace: float) -> None:
        """Stop taking data: the gRPC server (``grace`` for calls under way) and OTLP/HTTP.
        The management listener stays up until ``stop_management``."""
        if self._grpc is not None:
            await self._grpc.stop(grace=grace)
        for runner in self._runners[:1]:
            await runner.cleanup()

    async def stop_management(self) -> None:
        """Stop the management listener (after the shutdown it reports on)."""
        for runner in self._runners[1:]:
            await runner.cleanup()

    async def abort(self) -> None:
        """Stop whatever a failed start left running."""
        if self._grpc is not None:
            await self._grpc.stop(0)
        for runner in self._runners:
            await runner.cleanup()
