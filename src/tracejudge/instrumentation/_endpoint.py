"""Is anything listening where ``instrument()`` exports?

Run without a collector, the OTLP exporter spends about eight seconds printing
connection-refused retries at exit, inside the user's application. The traces endpoint is
resolved here from the standard ``OTEL_EXPORTER_OTLP_*`` variables exactly as the exporter
resolves it, and tried with one short TCP connect by ``UnreachableGuard`` (``_guard``), the exporter
``instrument()`` sets up.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True, slots=True)
class OtlpEndpoint:
    """Where spans would go: the URL as configured, and the host and port it names."""

    url: str
    host: str
    port: int


def traces_endpoint(environ: Mapping[str, str] | None = None) -> OtlpEndpoint:
    """The traces endpoint of the OTLP exporter ``instrument()`` sets up.

    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` wins over ``OTEL_EXPORTER_OTLP_ENDPOINT``; the
    defaults are ``http://localhost:4318`` (``http/protobuf``) and ``http://localhost:4317``
    (``grpc``), per the OTLP exporter specification.
    """
    env = os.environ if environ is None else environ
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    grpc = protocol == "grpc"
    url = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or ("http://localhost:4317" if grpc else "http://localhost:4318")
    ).strip()
    parts = urlsplit(url if "://" in url else f"http://{url}")
    default_port = 443 if parts.scheme == "https" else (4317 if grpc else 4318)
    try:
        port = parts.port or default_port
    except ValueError:
        port = default_port
    return OtlpEndpoint(url, parts.hostname or "localhost", port)


def listening(endpoint: OtlpEndpoint, timeout: float = 0.3) -> bool:
    """Whether a TCP connection to the endpoint opens within ``timeout`` seconds."""
    try:
        with socket.create_connection((endpoint.host, endpoint.port), timeout=timeout):
            return True
    except OSError:
        return False
