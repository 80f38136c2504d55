"""A loopback server that answers judge-model calls with scripted replies, in order.

No language model can run on these machines, so grader tests drive the real ``openai``
and ``anthropic`` SDKs against this server: each ``POST`` gets the next scripted reply
(a status and a JSON body in the provider's wire shape), the last one repeating. A reply
may be ``HOLD``: the server keeps the request open until ``release()`` (a test of the
client's deadline waits on that event, not on a sleep). Every request body is kept for
assertions (what the judge was shown).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.support.guards import WAIT_S


@dataclass(frozen=True, slots=True)
class Scripted:
    """One reply: HTTP status, JSON body, extra headers."""

    status: int
    body: dict[str, Any]
    headers: tuple[tuple[str, str], ...] = ()


HOLD = Scripted(0, {})
"""Keep the request open until ``JudgeServer.release()``."""


def openai_reply(
    content: str | None, *, refusal: str | None = None, finish: str = "stop"
) -> Scripted:
    """A Chat Completions response whose message says ``content`` (or refuses)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    return Scripted(
        200,
        {
            "id": "chatcmpl-judge",
            "object": "chat.completion",
            "created": 1_764_460_800,
            "model": "judge-1",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
    )


def anthropic_reply(text: str, *, stop: str = "end_turn") -> Scripted:
    """A Messages response with one text block."""
    return Scripted(
        200,
        {
            "id": "msg_judge",
            "type": "message",
            "role": "assistant",
            "model": "judge-1",
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    )


def rate_limited() -> Scripted:
    """A 429 in OpenAI's and Anthropic's error shape (both read ``error.message``)."""
    return Scripted(
        429,
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
        (("retry-after", "0"),),
    )


class JudgeServer:
    """Serve ``replies`` on 127.0.0.1; ``base_url`` is for the OpenAI SDK, ``origin`` for
    Anthropic's."""

    def __init__(self, replies: Iterable[Scripted]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL."""
        return self.origin + "/v1"

    def release(self) -> None:
        """Let held requests go (they then get a 503)."""
        self._released.set()

    def __enter__(self) -> JudgeServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=WAIT_S)

    def _next(self, body: dict[str, Any]) -> Scripted:
        with self._lock:
            n = len(self.requests)
            self.requests.append(body)
            return self.replies[min(n, len(self.replies) - 1)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = server._next(body)
                if reply is HOLD:
                    server._released.wait(WAIT_S)
                    reply = Scripted(503, {"error": {"message": "released"}})
                payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    for name, value in reply.headers:
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its deadline passed)

        return Handler
