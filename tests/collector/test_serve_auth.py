"""``tracejudge serve`` on the command line with access control: the real command twice,
the real refund agent, the OTel SDK's standard ``OTEL_EXPORTER_OTLP_*`` variables.

The target demands a bearer token (from ``--auth-token-file``) over TLS and keeps what it
judged in ``--output``; a front collector forwards to it with the token as a header read
from an environment variable (``--forward-header authorization=env:...``) and the test
CA (``--forward-ca-file``). The agent reaches the target both through the front and
directly (``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_EXPORTER_OTLP_CERTIFICATE``); a client
without the token is refused and its trace is neither judged nor kept.
"""

from __future__ import annotations

import json
import os
import re
import signal
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.certs import make_certs
from tests.support.guards import IO_S, PROCESS_S
from tracejudge import semconv as sc
from tracejudge.model.files import load_spans

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "refund" / "rules.yaml"
BIN = Path(sys.executable).parent
TOKEN = "serve-test-token-5f1c9a0e7b2d4c68"
START = re.compile(
    r"^tracejudge serve: listening on OTLP/gRPC 127\.0\.0\.1:(\d+)(?: \(TLS\))?, "
    r"OTLP/HTTP (https?)://127\.0\.0\.1:(\d+)(?:, management https?://127\.0\.0\.1:(\d+))?; "
    r"(.*?)(?:; rules cost [^;]*)? \((pure-python|compiled) build\)$"
)
# requests lets these override the exporter's certificate_file (psf/requests#3829).
_CA_OVERRIDES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _CA_OVERRIDES}
    return {**env, **extra}


def _serve(
    *flags: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], re.Match[str]]:
    proc = subprocess.Popen(
        [
            str(BIN / "tracejudge"), "serve", "--rules", str(RULES),
            "--grpc-port", "0", "--http-port", "0", "--decision-wait-after-root", "200ms",
            *flags,
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or _env(),
    )  # fmt: skip
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        match = START.match(line.rstrip("\n"))
        if match:
            return proc, match
    proc.wait(timeout=PROCESS_S)
    raise AssertionError(f"no start-up line; stderr: {''.join(seen)}")


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=PROCESS_S)
    assert proc.returncode == 0, err
    return err


def _agent(variant: str, env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "refund" / "agent.py"), "--variant", variant],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_S, check=True,
    ).stdout  # fmt: skip
    match = re.search(r"trace: ([0-9a-f]{32})", out)
    assert match, out
    return match.group(1)


def test_token_and_tls_end_to_end_through_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    certs = make_certs(tmp_path / "certs")
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n", encoding="utf-8")
    tokens.chmod(0o600)
    judged = tmp_path / "judged.jsonl"
    target, t_start = _serve(
        "--auth-token-file", str(tokens), "--tls-cert", str(certs.server_cert),
        "--tls-key", str(certs.server_key), "--management-port", "0", "--output", str(judged),
    )  # fmt: skip
    front = None
    try:
        assert t_start.group(2) == "https"
        assert t_start.group(5) == (
            f"judged traces to {judged}; bearer token required; "
            "verdicts: one line per run on stdout"
        )
        t_http, t_mgmt = t_start.group(3), t_start.group(4)
        front, f_start = _serve(
            "--forward", f"https://127.0.0.1:{t_http}",
            "--forward-header", "authorization=env:TJ_FORWARD_AUTH",
            "--forward-ca-file", str(certs.ca),
            "--verdicts-jsonl", str(tmp_path / "front.jsonl"),
            env=_env(TJ_FORWARD_AUTH=f"Bearer {TOKEN}"),
        )  # fmt: skip
        via_front = _agent(
            "wrong_order",
            _env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{f_start.group(3)}"),
        )
        direct = _agent(
            "silent_failure",
            _env(
                OTEL_EXPORTER_OTLP_ENDPOINT=f"https://127.0.0.1:{t_http}",
                OTEL_EXPORTER_OTLP_HEADERS=f"authorization=Bearer%20{TOKEN}",
                OTEL_EXPORTER_OTLP_CERTIFICATE=str(certs.ca),
            ),
        )
        # A client with TLS right but no token: refused, its run never judged nor kept.
        memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        with provider.get_tracer("intruder").start_as_current_span(
            "invoke_agent refund", attributes={sc.GEN_AI_AGENT_NAME: "refund"}
        ) as span:
            intruder = f"{span.get_span_context().trace_id:032x}"
        provider.shutdown()
        for name in _CA_OVERRIDES:
            monkeypatch.delenv(name, raising=False)
        anonymous: SpanExporter = OTLPSpanExporter(
            endpoint=f"https://127.0.0.1:{t_http}/v1/traces", certificate_file=str(certs.ca)
        )
        assert anonymous.export(memory.get_finished_spans()) == SpanExportResult.FAILURE
        anonymous.shutdown()

        ctx = ssl.create_default_context(cafile=str(certs.ca))
        request = urllib.request.Request(
            f"https://127.0.0.1:{t_mgmt}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=IO_S, context=ctx) as resp:
            metrics = json.loads(resp.read())
        assert metrics["auth"]["by_listener"] == {"OTLP/HTTP": 1}
    finally:
        if front is not None:
            _stop(front)
        err = _stop(target)
    assert "refused a request from 127.0.0.1: missing bearer token" in err
    spans = load_spans(judged)
    assert {s.trace_id for s in spans} == {via_front, direct}
    verdicts = {
        s.trace_id: s.attributes[sc.TRACEJUDGE_VERDICT] for s in spans if s.parent_span_id is None
    }
    assert verdicts == {via_front: "fail", direct: "fail"}
    assert intruder not in {s.trace_id for s in spans}
