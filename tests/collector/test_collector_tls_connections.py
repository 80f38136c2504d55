"""The per-client connection cap under TLS counts handshakes (issue 18, item 9).

A listener created with an SSL context hands its protocol a connection only once the
handshake is done, so the cap (``http_max_connections_per_client``) counted only finished
handshakes: one client opening connections that never finish theirs held as many as it
liked, each until the header timeout. The clients here are raw sockets that send the start
of a TLS record and nothing more, and a real TLS client (``ssl``) with the test CA.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.collector.collector_support import wait_for
from tests.support.certs import Certs, make_certs
from tests.support.guards import IO_S
from tracejudge.collector import Collector

CLIENT_HELLO_START = b"\x16\x03\x01\x02\x00"
"""A TLS handshake record header announcing 512 bytes that never come."""


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def _stalled_handshake(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=IO_S)
    s.sendall(CLIENT_HELLO_START)
    return s


def _get(port: int, certs: Certs, path: str = "/healthz") -> int:
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=IO_S, context=ctx)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    finally:
        conn.close()


def _tls(certs: Certs) -> dict[str, Path]:
    return {"tls_cert": certs.server_cert, "tls_key": certs.server_key}


def test_connections_that_never_finish_a_tls_handshake_count_against_the_cap(
    collector_factory: Callable[..., Collector], certs: Certs
) -> None:
    """20 connections from one address that never finish their handshake: 4 are held (the
    cap), 16 refused at once; a real TLS client from that address is refused too, and is
    served as soon as the stalled connections close."""
    c = collector_factory(
        **_tls(certs), http_max_connections_per_client=4, http_header_timeout=60.0
    )
    stalled = [_stalled_handshake(c.http_port) for _ in range(20)]
    try:
        wait_for(
            lambda: c.snapshot()["http_connections"]["refused"] == 16,
            what="16 connections beyond the cap refused",
        )
        assert c.snapshot()["http_connections"]["open"] == 4
        with pytest.raises((ConnectionResetError, ssl.SSLError)):  # reset at accept
            _get(c.http_port, certs)
        assert c.snapshot()["http_connections"]["refused"] == 17
    finally:
        for s in stalled:
            s.close()
    wait_for(lambda: c.snapshot()["http_connections"]["open"] == 0, what="the slots given back")
    assert _get(c.http_port, certs) == 200
    assert c.snapshot()["http_connections"]["tls_failed"] == 4


def test_a_handshake_not_finished_within_the_header_timeout_is_closed_and_counted(
    collector_factory: Callable[..., Collector], certs: Certs
) -> None:
    """A stalled handshake is dropped after ``http_header_timeout`` (the server closes the
    socket), counted as ``tls_failed``, and its slot is given back."""
    c = collector_factory(**_tls(certs), http_header_timeout=0.3)
    s = _stalled_handshake(c.http_port)
    try:
        assert s.recv(1024) == b""  # closed by the server, nothing answered
    except ConnectionResetError:
        pass
    finally:
        s.close()
    wait_for(lambda: c.snapshot()["http_connections"]["tls_failed"] == 1, what="counted")
    wait_for(lambda: c.snapshot()["http_connections"]["open"] == 0, what="slot given back")
    assert _get(c.http_port, certs) == 200
