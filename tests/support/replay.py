"""A loopback HTTP server that replays recorded VCR cassettes to real SDK clients.

Why: tests must drive the real ``openai``/``anthropic`` SDKs over real sockets (their
retries, SSE parsing and error mapping included) without network access. The server
answers each request with the recorded response of the same method + path: bodies are
sent as recorded (SSE streams byte for byte), gzip ``!!binary`` bodies are decompressed,
and when a cassette holds the same call several times the first recording is replayed
(``sequential=True`` serves them in recorded order instead, repeating the last one).

Cassettes live in tests/fixtures/cassettes/ (Apache-2.0, recorded by
open-telemetry/opentelemetry-python-contrib and traceloop/openllmetry; origin and checksum of
each in tests/fixtures/MANIFEST.tsv).
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import yaml

from tests.support.guards import WAIT_S
from tests.support.paths import CASSETTES

CASSETTE_ROOT = CASSETTES

_HOP_HEADERS = frozenset({"content-length", "transfer-encoding", "content-encoding", "connection"})


@dataclass(frozen=True, slots=True)
class RecordedResponse:
    """One recorded answer, ready to send."""

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(slots=True)
class ReceivedRequest:
    """What the server was asked (for assertions on what the SDK sent)."""

    method: str
    path: str
    body: bytes

    def json(self) -> object:
        """The request body parsed as JSON."""
        return json.loads(self.body)


def load_cassette(path: str | Path) -> list[tuple[str, str, RecordedResponse]]:
    """``(method, path, response)`` for each interaction of a VCR cassette file.

    Relative paths are taken under the cassette folder (tests/fixtures/cassettes/).
    """
    p = Path(path)
    if not p.is_absolute():
        p = CASSETTE_ROOT / p
    doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    out: list[tuple[str, str, RecordedResponse]] = []
    for interaction in doc.get("interactions", []):
        req = interaction["request"]
        resp = interaction["response"]
        raw = resp.get("body", {}).get("string", b"")
        body = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
        headers: list[tuple[str, str]] = []
        gzipped = False
        for name, values in (resp.get("headers") or {}).items():
            if name.lower() == "content-encoding" and "gzip" in str(values).lower():
                gzipped = True
            if name.lower() in _HOP_HEADERS:
                continue
            for v in values if isinstance(values, list) else [values]:
                headers.append((name, str(v)))
        if gzipped and body[:2] == b"\x1f\x8b":
            body = gzip.decompress(body)
        status = resp.get("status", {})
        out.append(
            (
                str(req["method"]).upper(),
                urlsplit(str(req["uri"])).path,
                RecordedResponse(
                    int(status.get("code", 200)),
                    str(status.get("message", "")),
                    tuple(headers),
                    body,
                ),
            )
        )
    return out


def derived_cassette(
    source: str | Path,
    into: Path,
    edits: Iterable[tuple[str, str]],
    *,
    drop_lines: str = "",
    path: str | None = None,
    status: int | None = None,
) -> Path:
    """A copy of a recorded cassette whose response bodies are edited: each ``(old, new)``
    replaced (``old`` must occur), and, with ``drop_lines``, the SSE ``data:`` lines that
    contain it removed. For the malformed responses no recording holds (invalid tool-call
    JSON, an unknown finish reason, missing usage): the test says what it changed from
    the real response, rather than inventing one. With ``path``, every recording is
    served at that path instead (the same API behind another route: Azure OpenAI's
    ``/openai/deployments/{name}/chat/completions``). With ``status``, every recording is
    served with that HTTP status instead (a server error no recording holds: the body
    stays the recorded one). Written to ``into`` (a tmp_path)."""
    p = Path(source)
    if not p.is_absolute():
        p = CASSETTE_ROOT / p
    doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    edits = list(edits)
    for interaction in doc.get("interactions", []):
        if path is not None:
            parts = urlsplit(interaction["request"]["uri"])
            interaction["request"]["uri"] = f"{parts.scheme}://{parts.netloc}{path}"
        if status is not None:
            interaction["response"]["status"] = {"code": status, "message": ""}
        if not edits and not drop_lines:
            continue  # the body as recorded (a binary one too)
        body = interaction["response"]["body"]
        text = body["string"]
        if not isinstance(text, str):
            raise ValueError(f"{p.name}: only text bodies can be edited")
        for old, new in edits:
            if old not in text:
                raise ValueError(f"{p.name}: {old!r} is not in the recorded body")
            text = text.replace(old, new)
        if drop_lines:
            text = "\n".join(line for line in text.split("\n") if drop_lines not in line)
        body["string"] = text
    out = into / f"derived-{p.name}"
    out.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    return out


@dataclass(slots=True)
class _Routes:
    table: dict[tuple[str, str], list[RecordedResponse]] = field(default_factory=dict)
    served: dict[tuple[str, str], int] = field(default_factory=dict)
    sequential: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def pick(self, method: str, path: str) -> RecordedResponse | None:
        key = (method, path)
        with self.lock:
            options = self.table.get(key)
            if not options:
                return None
            if not self.sequential:
                return options[0]
            n = self.served.get(key, 0)
            self.served[key] = n + 1
            return options[min(n, len(options) - 1)]


class ReplayServer:
    """Serve cassettes on 127.0.0.1 (ephemeral port) in a background thread.

    Use as a context manager, or ``start()``/``stop()``. ``base_url`` is the URL to give
    the SDK (``{server}/v1`` for OpenAI-style paths; ``origin`` has no path).
    Unmatched requests get a 418 JSON error (4xx: SDKs do not retry it) and are listed
    in ``unmatched``.
    """

    def __init__(self, cassettes: Iterable[str | Path], *, sequential: bool = False) -> None:
        self._routes = _Routes(sequential=sequential)
        for cassette in cassettes:
            for method, path, response in load_cassette(cassette):
                self._routes.table.setdefault((method, path), []).append(response)
        self.requests: list[ReceivedRequest] = []
        self.unmatched: list[ReceivedRequest] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # A short poll interval: ``stop()`` waits for the next poll (50 ms made teardown
        # a quarter of the instrumentation suite's time).
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
        """The OpenAI-style base URL (``origin + "/v1"``)."""
        return self.origin + "/v1"

    @property
    def port(self) -> int:
        """The listening port."""
        return int(self._server.server_address[1])

    def start(self) -> ReplayServer:
        """Start serving; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=WAIT_S)

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: headers and body are separate writes; with Nagle on, the body
            # waits for the client's delayed ACK (~40 ms per request on loopback).
            disable_nagle_algorithm = True

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = urlsplit(self.path).path
                received = ReceivedRequest(self.command, path, body)
                server.requests.append(received)
                response = server._routes.pick(self.command, path)
                if response is None:
                    server.unmatched.append(received)
                    payload = json.dumps(
                        {"error": {"message": f"no recording for {self.command} {path}"}}
                    ).encode()
                    response = RecordedResponse(
                        418, "No Recording", (("Content-Type", "application/json"),), payload
                    )
                self.send_response(response.status, response.reason or None)
                for name, value in response.headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(response.body)))
                self.end_headers()
                try:
                    self.wfile.write(response.body)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading (an abandoned stream)

            do_GET = _handle
            do_POST = _handle
            do_DELETE = _handle

            def log_message(self, format: str, *args: object) -> None:
                return

        return Handler
