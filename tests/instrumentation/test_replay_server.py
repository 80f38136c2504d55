"""The cassette replay server itself: what tests rely on it to serve.

Plain ``urllib`` over real sockets; no SDK involved, so a failure here points at the
server rather than at a patcher.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable

import yaml

from tests.support.guards import IO_S
from tests.support.replay import CASSETTE_ROOT, ReplayServer, load_cassette

Replay = Callable[..., ReplayServer]


def _post(url: str, body: bytes = b"{}") -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=body, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=IO_S) as resp:
            return resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers.items()), err.read()


def test_sse_body_served_byte_for_byte(replay: Replay) -> None:
    """A recorded SSE stream is sent exactly as recorded, with its content type."""
    name = "openai/test_chat_completion_streaming.yaml"
    server = replay(name)
    status, headers, body = _post(server.base_url + "/chat/completions")
    doc = yaml.safe_load((CASSETTE_ROOT / name).read_text())
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    assert body == doc["interactions"][0]["response"]["body"]["string"].encode()
    assert server.requests[0].path == "/v1/chat/completions"


def test_gzip_binary_body_is_decompressed(replay: Replay) -> None:
    """``!!binary`` gzip bodies are served decompressed, without Content-Encoding."""
    server = replay("anthropic/test_anthropic_message_create_with_events_with_content.yaml")
    status, headers, body = _post(server.origin + "/v1/messages")
    assert status == 200
    assert "Content-Encoding" not in headers
    assert json.loads(body)["type"] == "message"


def test_first_recording_by_default_sequential_on_request(replay: Replay) -> None:
    """Repeated calls get the first recording, or the recordings in order when asked."""
    name = "openai/test_chat_completion_tool_calls_with_content.yaml"
    first, second = (r.body for _, _, r in load_cassette(name))
    default = replay(name)
    assert [_post(default.base_url + "/chat/completions")[2] for _ in range(2)] == [first, first]
    ordered = replay(name, sequential=True)
    got = [_post(ordered.base_url + "/chat/completions")[2] for _ in range(3)]
    assert got == [first, second, second]


def test_unmatched_request_is_a_clear_4xx(replay: Replay) -> None:
    """A request with no recording gets a 418 naming it, and is listed in ``unmatched``."""
    server = replay("openai/test_chat_completion_with_content.yaml")
    status, _, body = _post(server.base_url + "/embeddings")
    assert status == 418
    assert "no recording for POST /v1/embeddings" in body.decode()
    assert [r.path for r in server.unmatched] == ["/v1/embeddings"]


def test_keep_alive_requests_are_not_delayed(replay: Replay) -> None:
    """Requests on a reused connection answer in milliseconds: with Nagle's algorithm on,
    the body (a second write) waited for the client's delayed ACK, ~40 ms per request,
    which SDK clients (keep-alive) paid on every call after the first."""
    server = replay("openai/test_chat_completion_with_content.yaml")

    def timed(conn: http.client.HTTPConnection) -> float:
        start = time.perf_counter()
        conn.request("POST", "/v1/chat/completions", body=b"{}")
        response = conn.getresponse()
        assert response.status == 200
        response.read()
        return time.perf_counter() - start

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=IO_S)
    reused, fresh = [], []
    try:
        timed(conn)  # the connection's first request
        for _ in range(10):  # interleaved, so both see the same load
            reused.append(timed(conn))
            one = http.client.HTTPConnection("127.0.0.1", server.port, timeout=IO_S)
            try:
                fresh.append(timed(one))
            finally:
                one.close()
    finally:
        conn.close()
    # Compared with the same run's requests on new connections (which the delayed ACK does
    # not hold: TCP starts in quick-ACK mode), medians, with a wide margin: on a busy
    # machine both are slower, the stall is a fixed ~40 ms on the reused one only.
    median = sorted(reused)[5], sorted(fresh)[5]
    assert median[0] < 3 * median[1], (reused, fresh)
