"""Access control (issue 12, item 8 / defect 9): bearer tokens and TLS on both receivers,
mutual TLS, the management listener, and headers + TLS on the forwarder.

Real parts throughout: the OTel SDK's own OTLP exporters (gRPC and HTTP) with their
header and TLS options, certificates made in the test (tests/support/certs.py), and as
the forward target that demands a token over TLS a second real ``Collector``.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2, status_pb2  # type: ignore[import-untyped]
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.collector.collector_support import (
    Sink,
    StandInJudge,
    attrs,
    make_request,
    make_span,
    new_ids,
    wait_for,
)
from tests.support.certs import Certs, make_certs
from tests.support.guards import IO_S
from tracejudge import semconv as sc
from tracejudge.collector import Collector

TOKEN = "tj-test-token-0123456789abcdef"
OTHER = "tj-rotated-token-fedcba9876543210"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(autouse=True)
def _exporter_ca_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OTLP/HTTP exporter sets ``certificate_file`` on its requests session, and
    requests lets ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` override a session's
    ``verify`` (psf/requests#3829); this machine sets both. Unset, as on most hosts."""
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    """Two tokens (rotation: the old one still works while the new one rolls out)."""
    path = tmp_path / "tokens"
    path.write_text(f"# tracejudge tokens\n{TOKEN}\n\n{OTHER}\n", encoding="utf-8")
    path.chmod(0o600)
    return path


def _spans(n_runs: int = 1) -> Sequence[ReadableSpan]:
    """Finished spans of ``n_runs`` one-tool agent runs from the real SDK."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("auth-test")
    for _ in range(n_runs):
        with (
            tracer.start_as_current_span(
                "invoke_agent refund", attributes={sc.GEN_AI_AGENT_NAME: "refund"}
            ),
            tracer.start_as_current_span("execute_tool lookup"),
        ):
            pass
    provider.shutdown()
    return memory.get_finished_spans()


def _export(exporter: SpanExporter, spans: Sequence[ReadableSpan]) -> SpanExportResult:
    try:
        return exporter.export(spans)
    finally:
        exporter.shutdown()


def _https(
    port: int,
    path: str,
    certs: Certs,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    client_cert: bool = False,
) -> tuple[int, dict[str, str], bytes]:
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    if client_cert:
        ctx.load_cert_chain(certs.client_cert, certs.client_key)
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=IO_S, context=ctx)
    try:
        method = "GET" if body is None else "POST"
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _grpc_call(port: int, certs: Certs, metadata: tuple[tuple[str, str], ...]) -> grpc.RpcError:
    """A raw Export call over TLS that is expected to fail; returns its error."""
    creds = grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes())
    with grpc.secure_channel(f"127.0.0.1:{port}", creds) as channel:
        call = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export", None, None
        )
        body = make_request([make_span(*new_ids())]).SerializeToString()
        with pytest.raises(grpc.RpcError) as info:
            call(body, timeout=IO_S, metadata=metadata)
    return info.value


def test_grpc_receiver_takes_a_token_over_tls_and_refuses_the_rest(
    collector_factory: Callable[..., Collector], sink: Sink, certs: Certs, token_file: Path
) -> None:
    """The real gRPC exporter with TLS and ``authorization: Bearer`` gets its run judged
    and forwarded; without a token, or with a wrong one, the call fails UNAUTHENTICATED
    with a message saying so, nothing is judged or forwarded, and /metrics counts it."""
    judge = StandInJudge()
    c = collector_factory(
        judge=judge,
        auth_token_file=token_file,
        tls_cert=certs.server_cert,
        tls_key=certs.server_key,
    )
    creds = grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes())
    endpoint = f"127.0.0.1:{c.grpc_port}"
    refused = GrpcExporter(endpoint=endpoint, credentials=creds)
    assert _export(refused, _spans()) == SpanExportResult.FAILURE
    wrong = GrpcExporter(
        endpoint=endpoint, credentials=creds, headers={"authorization": "Bearer nope"}
    )
    assert _export(wrong, _spans()) == SpanExportResult.FAILURE
    missing = _grpc_call(c.grpc_port, certs, ())
    assert missing.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "missing bearer token" in (missing.details() or "")
    invalid = _grpc_call(c.grpc_port, certs, (("authorization", "Bearer x" * 3),))
    assert invalid.code() == grpc.StatusCode.UNAUTHENTICATED
    assert (invalid.details() or "") == "invalid bearer token"

    for token in (TOKEN, OTHER):  # both lines of the file are valid
        good = GrpcExporter(
            endpoint=endpoint, credentials=creds, headers={"authorization": f"Bearer {token}"}
        )
        assert _export(good, _spans()) == SpanExportResult.SUCCESS
    wait_for(lambda: len(sink.spans()) == 4, what="the two authenticated runs")
    assert len(judge.calls) == 2, "only the authenticated runs were judged"
    assert c.stats.spans.get("received") == 4
    auth = c.snapshot()["auth"]
    assert (auth["missing"], auth["invalid"], auth["refused"]) == (2, 2, 4)
    assert auth["by_listener"] == {"OTLP/gRPC": 4}


def test_http_receiver_takes_a_token_over_tls_and_refuses_the_rest(
    collector_factory: Callable[..., Collector], sink: Sink, certs: Certs, token_file: Path
) -> None:
    """The real HTTP exporter over https with the header is judged; a request without one
    gets 401, ``WWW-Authenticate`` and an UNAUTHENTICATED ``google.rpc.Status`` before its
    body is read; /metrics and /v1/gate need the token, /healthz does not."""
    judge = StandInJudge()
    c = collector_factory(
        judge=judge,
        auth_token_file=token_file,
        tls_cert=certs.server_cert,
        tls_key=certs.server_key,
    )
    url = f"https://127.0.0.1:{c.http_port}/v1/traces"
    refused = HttpExporter(endpoint=url, certificate_file=str(certs.ca))
    assert _export(refused, _spans()) == SpanExportResult.FAILURE
    body = make_request([make_span(*new_ids())]).SerializeToString()
    status, headers, raw = _https(
        c.http_port, "/v1/traces", certs, {"Content-Type": "application/x-protobuf"}, body
    )
    assert status == 401
    assert headers["www-authenticate"] == 'Bearer realm="tracejudge"'
    answer = status_pb2.Status.FromString(raw)
    assert answer.code == code_pb2.UNAUTHENTICATED
    assert "missing bearer token" in answer.message
    status, _, raw = _https(
        c.http_port,
        "/v1/traces",
        certs,
        {"Content-Type": "application/json", "Authorization": "Bearer wrong-token-of-some-length"},
        b"{}",
    )
    assert (status, json.loads(raw)["message"]) == (401, "invalid bearer token")

    good = HttpExporter(
        endpoint=url, certificate_file=str(certs.ca), headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert _export(good, _spans()) == SpanExportResult.SUCCESS
    wait_for(lambda: len(sink.spans()) == 2, what="the authenticated run")
    assert len(judge.calls) == 1

    assert _https(c.http_port, "/metrics", certs)[0] == 401
    assert _https(c.http_port, "/v1/gate?agent=refund&variant=v1", certs)[0] == 401
    assert _https(c.http_port, "/healthz", certs)[0] == 200
    bearer = {"Authorization": f"bearer {TOKEN}"}  # the scheme is case-insensitive
    status, _, raw = _https(c.http_port, "/metrics", certs, bearer)
    assert status == 200
    metrics = json.loads(raw)
    assert metrics["auth"]["refused"] == 5  # exporter, two raw posts, /metrics, /v1/gate
    assert metrics["auth"]["by_listener"] == {"OTLP/HTTP": 5}
    assert _https(c.http_port, "/v1/gate?agent=refund&variant=v1", certs, bearer)[0] == 200


def test_mutual_tls_authenticates_clients_by_certificate(
    collector_factory: Callable[..., Collector], sink: Sink, certs: Certs
) -> None:
    """With a client CA, both receivers take clients holding a certificate it signed (no
    token needed) and fail the handshake for clients without one."""
    c = collector_factory(
        tls_cert=certs.server_cert, tls_key=certs.server_key, tls_client_ca=certs.ca
    )
    ca = certs.ca.read_bytes()
    endpoint = f"127.0.0.1:{c.grpc_port}"
    anonymous = grpc.ssl_channel_credentials(root_certificates=ca)
    # The exporter takes the refused handshake for an outage and retries: bound it.
    anonymous_exporter = GrpcExporter(endpoint=endpoint, credentials=anonymous, timeout=1)
    assert _export(anonymous_exporter, _spans()) == SpanExportResult.FAILURE
    # TLS 1.3: the client's handshake ends first; the server's refusal shows at the read.
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _https(c.http_port, "/healthz", certs)
    assert sink.spans() == []

    mutual = grpc.ssl_channel_credentials(
        root_certificates=ca,
        private_key=certs.client_key.read_bytes(),
        certificate_chain=certs.client_cert.read_bytes(),
    )
    assert _export(GrpcExporter(endpoint=endpoint, credentials=mutual), _spans()) == (
        SpanExportResult.SUCCESS
    )
    http_exporter = HttpExporter(
        endpoint=f"https://127.0.0.1:{c.http_port}/v1/traces",
        certificate_file=str(certs.ca),
        client_certificate_file=str(certs.client_cert),
        client_key_file=str(certs.client_key),
    )
    assert _export(http_exporter, _spans()) == SpanExportResult.SUCCESS
    wait_for(lambda: len(sink.spans()) == 4, what="both certified runs")
    assert _https(c.http_port, "/metrics", certs, client_cert=True)[0] == 200


def test_management_listener_holds_metrics_and_gate_behind_the_token(
    collector_factory: Callable[..., Collector], token_file: Path
) -> None:
    """With a management port, /metrics and /v1/gate live there only (404 on the OTLP
    port), with the same token rule; /healthz stays open for probes."""
    c = collector_factory(auth_token_file=token_file, management_port=0)
    assert c.management_port is not None
    assert c.management_port != c.http_port

    def get(port: int, path: str, token: str | None = None) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_S)
        try:
            headers = {} if token is None else {"Authorization": f"Bearer {token}"}
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            resp.read()
            return resp.status
        finally:
            conn.close()

    gate = "/v1/gate?agent=refund&variant=canary"
    for path in ("/metrics", gate, "/healthz"):
        assert get(c.http_port, path, TOKEN) == 404, path
    assert get(c.management_port, "/healthz") == 200
    assert get(c.management_port, "/metrics") == 401
    assert get(c.management_port, gate, "wrong-token-wrong-token") == 401
    assert get(c.management_port, "/metrics", TOKEN) == 200
    assert get(c.management_port, gate, TOKEN) == 200
    assert c.snapshot()["auth"]["by_listener"] == {"management": 2}


def test_forwarder_sends_headers_over_tls_to_a_backend_that_demands_them(
    collector_factory: Callable[..., Collector],
    sink: Sink,
    certs: Certs,
    token_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second real collector that demands a token over TLS is the forward target, over
    https and over grpcs: the token travels as a header read from an environment
    variable (never in argv), the CA bundle verifies the target, and the batches arrive.
    With a wrong token the target refuses them (401 / UNAUTHENTICATED) and judges
    nothing, and the sender counts them as dropped."""
    target_judge = StandInJudge()
    target = collector_factory(
        judge=target_judge,
        auth_token_file=token_file,
        tls_cert=certs.server_cert,
        tls_key=certs.server_key,
    )
    monkeypatch.setenv("TJ_FORWARD_AUTH", f"Bearer {OTHER}")
    monkeypatch.setenv("TJ_WRONG_AUTH", "Bearer not-the-token-at-all")
    https = f"https://127.0.0.1:{target.http_port}"
    grpcs = f"grpcs://127.0.0.1:{target.grpc_port}"
    for url in (https, grpcs):
        sender = collector_factory(
            forward=[url],
            forward_headers={"Authorization": "env:TJ_FORWARD_AUTH"},
            forward_ca_file=certs.ca,
        )
        grpc_in = GrpcExporter(endpoint=f"127.0.0.1:{sender.grpc_port}", insecure=True)
        assert _export(grpc_in, _spans(2)) == SpanExportResult.SUCCESS
        # The target judges the runs again and forwards them to the sink.
        wait_for(lambda: len(target_judge.calls) == 2, what=f"2 runs judged via {url}")
        target_judge.calls.clear()
    wait_for(lambda: len(sink.spans()) == 8, what="both transports' batches at the sink")
    assert target.snapshot()["auth"]["refused"] == 0
    roots = [s for s in sink.spans() if not s.parent_span_id]
    assert len(roots) == 4
    assert all(attrs(s).get(sc.TRACEJUDGE_VERDICT) == "pass" for s in roots)

    wrong = collector_factory(
        forward=[https, grpcs],
        forward_headers={"authorization": "env:TJ_WRONG_AUTH"},
        forward_ca_file=certs.ca,
    )
    wrong_in = GrpcExporter(endpoint=f"127.0.0.1:{wrong.grpc_port}", insecure=True)
    assert _export(wrong_in, _spans()) == SpanExportResult.SUCCESS
    wait_for(lambda: wrong.stats.spans.get("dropped") == 4, what="both refusals")
    snap = wrong.snapshot()["targets"]
    assert "HTTP 401 (the backend refused our credentials" in snap[https]["last_error"]
    assert "UNAUTHENTICATED" in snap[grpcs]["last_error"]
    assert target.snapshot()["auth"]["by_listener"] == {"OTLP/HTTP": 1, "OTLP/gRPC": 1}
    assert target_judge.calls == [], "the refused batches were not judged"
    assert len(sink.spans()) == 8


def test_metrics_logs_and_start_line_never_show_url_credentials(
    collector_factory: Callable[..., Collector],
    sink: Sink,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    """A backend URL with user info and an API key in its query is forwarded to (the sink
    receives the batch), yet /metrics, the start-up line, the failure log of a second, dead
    URL and the disk queue's record of the targets show neither secret (nor the secret path
    of the webhook)."""
    live = f"http://tj-user:s3cret-pass@127.0.0.1:{sink.http_port}/v1/traces?api_key=k3y-value"
    dead = "http://tj-user:s3cret-pass@127.0.0.1:9/v1/traces?api_key=k3y-value"
    hook = f"http://127.0.0.1:{sink.http_port}/hooks/s3cret-pass"
    c = collector_factory(forward=[live, dead], webhook=hook, queue_dir=tmp_path / "queue")
    grpc_in = GrpcExporter(endpoint=f"127.0.0.1:{c.grpc_port}", insecure=True)
    assert _export(grpc_in, _spans()) == SpanExportResult.SUCCESS
    wait_for(lambda: len(sink.spans()) == 2, what="the batch at the sink")
    shown = "http://***@127.0.0.1:9/v1/traces?api_key=%2A%2A%2A"
    wait_for(lambda: bool(c.snapshot()["targets"][shown]["last_error"]), what="dead URL error")
    everything: dict[str, Any] = {
        "metrics": c.snapshot(),
        "line": c.describe(),
        "logs": [r.getMessage() for r in caplog.records],
    }
    assert c.store is not None
    everything["recorded"] = [t.url for t in c.store.recorded_targets()]
    text = json.dumps(everything)
    assert "s3cret-pass" not in text
    assert "k3y-value" not in text
    assert "tj-user" not in text
    assert shown in text
    assert shown in everything["recorded"]  # the disk queue's record of the target


def _touch_later(path: Path) -> None:
    """Move the file's mtime a second on: a filesystem's clock tick can be coarser than
    the time between two writes in a test."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_a_changed_token_file_is_picked_up_without_a_restart(
    collector_factory: Callable[..., Collector], token_file: Path
) -> None:
    """Rotation: the file is re-read within a second of a change; a file that no longer
    parses (emptied halfway through a rewrite) keeps the previous tokens."""
    c = collector_factory(auth_token_file=token_file, management_port=0)
    assert c.management_port is not None
    port = c.management_port

    def status(token: str) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=IO_S)
        try:
            conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {token}"})
            resp = conn.getresponse()
            resp.read()
            return resp.status
        finally:
            conn.close()

    new = "tj-brand-new-token-00112233445566"
    assert status(TOKEN) == 200
    assert status(new) == 401
    token_file.write_text(new + "\n", encoding="utf-8")
    _touch_later(token_file)
    wait_for(lambda: status(new) == 200, what="the new token accepted")
    assert status(TOKEN) == 401
    assert status(OTHER) == 401
    token_file.write_text("", encoding="utf-8")  # a rewrite caught halfway
    _touch_later(token_file)

    def tried() -> bool:  # each request may look at the file (at most once a second)
        assert status(new) == 200, "an unusable file keeps the previous tokens"
        return bool(c.snapshot()["auth"]["token_reload_failures"] == 1)

    wait_for(tried, what="the unusable file read and refused")
    assert status(new) == 200
    assert c.snapshot()["auth"]["token_reloads"] == 1


def test_an_unverified_backend_certificate_is_refused_unless_explicitly_allowed(
    collector_factory: Callable[..., Collector],
    sink: Sink,
    certs: Certs,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the backend's CA the forwarder does not send (the certificate fails
    verification, the batch waits and is retried, the error says why); only
    ``forward_insecure_skip_verify`` sends to it unverified."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)  # the system store: not our test CA
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    target = collector_factory(tls_cert=certs.server_cert, tls_key=certs.server_key)
    https = f"https://127.0.0.1:{target.http_port}"
    strict = collector_factory(forward=[https])
    loose = collector_factory(forward=[https], forward_insecure_skip_verify=True)
    for sender in (strict, loose):
        exporter = GrpcExporter(endpoint=f"127.0.0.1:{sender.grpc_port}", insecure=True)
        assert _export(exporter, _spans()) == SpanExportResult.SUCCESS
    wait_for(lambda: len(sink.spans()) == 2, what="the unverified run through the loose sender")
    wait_for(lambda: strict.decision is not None and strict.decision.queues[0].failures > 0)
    error = strict.snapshot()["targets"][https]["last_error"]
    assert "CERTIFICATE_VERIFY_FAILED" in error or "certificate verify failed" in error, error
    assert strict.stats.spans.get("forwarded", 0) == 0
    assert strict.snapshot()["targets"][https]["queued_spans"] == 2  # kept, not dropped
