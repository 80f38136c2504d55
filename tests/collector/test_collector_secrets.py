"""Nothing from a backend's answer or a client's credential reaches ``/metrics``,
``/healthz`` or the log unscrubbed (issue 18, items 3 and 7).

A backend's error text was shown as it came in ``targets.<name>.last_error``, password,
card number and bearer token included, while the logs and the dead-letter reason were
scrubbed. And aiohttp logged every request it could not parse with a full traceback
quoting the bytes: an ``Authorization`` header of the token plus 9 KB put the token in the
log, once per request. The backend here is a real OTLP receiver (``Sink``) that answers
with the secrets; the clients are real HTTP requests on raw sockets (no HTTP library sends
an over-long header on purpose).
"""

from __future__ import annotations

import json
from typing import Any

import grpc

from tests.collector.collector_support import (
    Sink,
    make_request,
    make_span,
    new_ids,
    post,
    wait_for,
)

PASSWORD = "hunter2-Correct-Horse-77"
CARD = "4111 1111 1111 1111"
BEARER_TOKEN = "abcdEFGH1234567890backendTOKEN"
ANSWER = json.dumps(
    {"error": "rejected", "password": PASSWORD, "card": CARD, "auth": f"Bearer {BEARER_TOKEN}"}
)
"""What the backend answers: its own text, quoting what it should not."""
SECRETS = (PASSWORD, CARD, BEARER_TOKEN)


def _get(port: int, path: str) -> tuple[str, dict[str, Any]]:
    raw = post(port, b"", method="GET", path=path)[2].decode()
    return raw, json.loads(raw)


def test_a_backends_error_text_is_scrubbed_in_metrics_and_healthz(
    collector_factory: Any, sink: Sink
) -> None:
    """An HTTP backend refusing for good (400) and a gRPC one failing (UNAVAILABLE), both
    quoting a password, a card number and a bearer token: ``/metrics`` shows each target's
    ``last_error`` and ``/healthz`` the failing one with data waiting, with every secret
    ``[REDACTED]`` as in the logs."""
    sink.fail_http = [400]
    sink.fail_body = ANSWER.encode()
    sink.fail_grpc = [grpc.StatusCode.UNAVAILABLE] * 10_000
    sink.fail_details = ANSWER
    c = collector_factory(forward=[sink.http_url, sink.grpc_url], decision_wait_after_root=0.05)
    tid, rid = new_ids()
    assert post(c.http_port, make_request([make_span(tid, rid)]).SerializeToString())[0] == 200
    wait_for(lambda: c.stats.spans["dropped"] == 1, what="the HTTP refusal")
    assert c.pipeline is not None
    grpc_queue = c.pipeline.queues[1]
    wait_for(lambda: grpc_queue.failures >= 1, what="the gRPC failure")

    raw, metrics = _get(c.http_port, "/metrics")
    health_raw, health = _get(c.http_port, "/healthz")
    errors = [t["last_error"] for t in metrics["targets"].values()]
    assert errors[0].startswith("HTTP 400: "), errors
    assert errors[1].startswith("gRPC UNAVAILABLE: "), errors
    assert all(e.count("[REDACTED]") == 3 for e in errors), errors
    assert health["status"] == "degraded"
    assert any("[REDACTED]" in r for r in health["reasons"]), health
    for secret in SECRETS:
        assert secret not in raw
        assert secret not in health_raw
    sink.fail_grpc.clear()
    wait_for(lambda: any(s.trace_id == tid for s in sink.spans()), what="delivery once back")
