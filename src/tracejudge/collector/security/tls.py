"""TLS for the receivers (server side, optionally requiring client certificates) and for
forwarding (client side), plus the per-target transport options of a forward URL.

Everything is loaded once at start-up through the same calls serving uses, so a key that
does not match its certificate, or an unreadable CA bundle, stops ``tracejudge serve``
with the file's name instead of failing the first handshake hours later.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from tracejudge.collector.security.credentials import resolve_secret


class TlsError(ValueError):
    """A certificate, key or CA file is missing, unreadable or does not fit."""


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TlsError(f"{what}: cannot read {path}: {exc.strerror or exc}") from exc


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The receivers' certificate and key; with ``client_ca``, clients must present a
    certificate signed by it (mutual TLS), which authenticates them as a token would."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def ssl_context(self) -> ssl.SSLContext:
        """The context for the HTTP listeners (TLS 1.2 at least)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            ctx.load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError) as exc:
            raise TlsError(
                f"tls_cert/tls_key: cannot load {self.cert} with {self.key}: {exc}"
            ) from exc
        if self.client_ca is not None:
            try:
                ctx.load_verify_locations(cafile=str(self.client_ca))
            except (OSError, ssl.SSLError) as exc:
                raise TlsError(f"tls_client_ca: cannot load {self.client_ca}: {exc}") from exc
            ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx

    def grpc_credentials(self) -> grpc.ServerCredentials:
        """The same certificate, key and client CA for the gRPC listener."""
        self.ssl_context()  # grpc's own loader only fails at the first handshake
        root = None if self.client_ca is None else _read(self.client_ca, "tls_client_ca")
        return grpc.ssl_server_credentials(
            [(_read(self.key, "tls_key"), _read(self.cert, "tls_cert"))],
            root_certificates=root,
            require_client_auth=root is not None,
        )


@dataclass(frozen=True, slots=True)
class ClientTls:
    """How forwarding verifies a TLS backend (``https://``, ``grpcs://``): the system's
    trust store unless ``ca_file`` is given; ``client_cert``/``client_key`` for a backend
    that wants mutual TLS. Verification is off only with ``insecure_skip_verify``."""

    ca_file: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    insecure_skip_verify: bool = False

    def check(self, what: str) -> None:
        """Refuse half a client key pair; load everything once (errors name ``what``)."""
        if (self.client_cert is None) != (self.client_key is None):
            raise TlsError(f"{what}: client_cert and client_key go together")
        self.ssl_context(what)

    def ssl_context(self, what: str = "forward") -> ssl.SSLContext:
        """The context for an ``https://`` target."""
        try:
            ctx = ssl.create_default_context(
                cafile=None if self.ca_file is None else str(self.ca_file)
            )
        except (OSError, ssl.SSLError) as exc:
            raise TlsError(f"{what}: cannot load CA file {self.ca_file}: {exc}") from exc
        if self.insecure_skip_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.client_cert is not None and self.client_key is not None:
            try:
                ctx.load_cert_chain(self.client_cert, self.client_key)
            except (OSError, ssl.SSLError) as exc:
                raise TlsError(
                    f"{what}: cannot load client certificate {self.client_cert}: {exc}"
                ) from exc
        return ctx

    def grpc_credentials(self) -> grpc.ChannelCredentials:
        """Channel credentials for a ``grpcs://`` target."""
        root = None if self.ca_file is None else _read(self.ca_file, "forward CA file")
        key = None if self.client_key is None else _read(self.client_key, "forward client key")
        cert = None if self.client_cert is None else _read(self.client_cert, "client cert")
        return grpc.ssl_channel_credentials(
            root_certificates=root, private_key=key, certificate_chain=cert
        )


@dataclass(frozen=True, slots=True)
class TargetOptions:
    """Transport options of one forward target: headers (values as ``env:NAME``,
    ``file:PATH`` or literal, resolved by ``resolved_headers``) and TLS."""

    headers: dict[str, str] = field(default_factory=dict)
    tls: ClientTls = field(default_factory=ClientTls)

    def resolved_headers(self, what: str) -> dict[str, str]:
        """The header values, read from their sources now."""
        out = {}
        for name, spec in self.headers.items():
            value = resolve_secret(spec, f"{what} header {name!r}")
            if "\n" in value or "\r" in value:
                raise TlsError(f"{what} header {name!r}: the value holds a line break")
            out[name] = value
        return out
