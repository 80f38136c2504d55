"""A scripted model server: OpenAI, Anthropic, Bedrock and Gemini wire formats, loopback only.

The demo and the examples run the real ``openai``, ``anthropic``, ``boto3`` and
``google-genai`` SDKs. Those SDKs need an
HTTP endpoint that speaks their wire formats, so this module serves one: a stdlib
``ThreadingHTTPServer`` bound to 127.0.0.1 on an ephemeral port that answers

- ``POST /<script>/v1/chat/completions`` (OpenAI Chat Completions, with tool calls and
  ``stream: true`` server-sent events),
- ``POST /<script>/v1/messages`` (Anthropic Messages, with ``tool_use`` blocks and
  ``stream: true`` events),
- ``POST /<script>/model/<modelId>/converse`` (Bedrock Converse, ``toolUse`` blocks),
- ``POST /<script>/v2/chat`` (Cohere v2 chat, tool calls; not streamed), and
- ``POST /<script>/v1beta/models/<model>:generateContent`` (Gemini, function calls),

from the ``Script`` named in the path. Point a client at ``server.openai_base_url(name)``,
``anthropic_base_url``, ``bedrock_endpoint_url`` or ``gemini_base_url``. Ids, ``created``
and token counts are derived from the script and the conversation, so a rerun produces
byte-identical responses.

Errors come back in each provider's error shape with a message that says what went wrong
(unknown script, exhausted script, malformed body), so the SDK raises a readable
``APIStatusError`` instead of failing somewhere later.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any

from tracejudge.demo.script import (
    Conversation,
    Reply,
    Script,
    ScriptError,
    anthropic_conversation,
    bedrock_conversation,
    gemini_conversation,
    openai_conversation,
)

_log = logging.getLogger(__name__)

CREATED = 1_764_460_800
"""Fixed ``created`` timestamp (2025-11-30T00:00:00Z) so responses are reproducible."""


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()


def _tokens(value: Any) -> int:
    """A deterministic stand-in for a tokenizer: about four characters per token."""
    return max(1, len(json.dumps(value, sort_keys=True, default=str)) // 4)


def _call_id(prefix: str, script: str, turn: int, index: int) -> str:
    return f"{prefix}{_digest(script, turn, index)[:24]}"


# --- OpenAI Chat Completions --------------------------------------------------------------


def _openai_message(script: Script, turn: int, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id("call_", script.name, turn, i),
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
    return message


def _openai_usage(body: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, Any]:
    prompt = _tokens(body.get("messages"))
    completion = _tokens(message)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def openai_completion(
    script: Script, conversation: Conversation, reply: Reply, body: Mapping[str, Any]
) -> dict[str, Any]:
    """Render ``reply`` as a ``chat.completion`` object."""
    message = _openai_message(script, conversation.turn, reply)
    return {
        "id": f"chatcmpl-{_digest(script.name, conversation.turn)[:29]}",
        "object": "chat.completion",
        "created": CREATED,
        "model": script.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": _openai_usage(body, message),
        "system_fingerprint": "fp_tracejudge",
    }


def openai_chunks(
    script: Script, conversation: Conversation, reply: Reply, body: Mapping[str, Any]
) -> Iterator[dict[str, Any]]:
    """Render ``reply`` as the ``chat.completion.chunk`` objects of a streamed response."""
    full = openai_completion(script, conversation, reply, body)
    base = {
        "id": full["id"],
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": script.model,
        "system_fingerprint": "fp_tracejudge",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice], "usage": None}

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    if reply.text:
        words = reply.text.split(" ")
        for i, word in enumerate(words):
            yield chunk({"content": word if i == 0 else " " + word})
    for i, call in enumerate(full["choices"][0]["message"].get("tool_calls", [])):
        head = {"index": i, "id": call["id"], "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": call["function"]["name"]}}]})
        yield chunk(
            {"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]}
        )
    yield chunk({}, full["choices"][0]["finish_reason"])
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        yield {**base, "choices": [], "usage": full["usage"]}


def openai_error(status: int, message: str) -> dict[str, Any]:
    """The OpenAI error body."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


# --- Anthropic Messages ------------------------------------------------------------------


def anthropic_message(
    script: Script, conversation: Conversation, reply: Reply, body: Mapping[str, Any]
) -> dict[str, Any]:
    """Render ``reply`` as an Anthropic ``message`` object."""
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for i, call in enumerate(reply.tool_calls):
        content.append(
            {
                "type": "tool_use",
                "id": _call_id("toolu_", script.name, conversation.turn, i),
                "name": call.name,
                "input": call.arguments,
            }
        )
    return {
        "id": f"msg_{_digest(script.name, conversation.turn)[:24]}",
        "type": "message",
        "role": "assistant",
        "model": str(body.get("model") or script.model),
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": _tokens(body.get("messages")),
            "output_tokens": _tokens(content),
        },
    }


def anthropic_events(
    script: Script, conversation: Conversation, reply: Reply, body: Mapping[str, Any]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Render ``reply`` as the server-sent events of a streamed Anthropic message."""
    full = anthropic_message(script, conversation, reply, body)
    usage = full["usage"]
    head = {**full, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": head}
    for index, block in enumerate(full["content"]):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            words = block["text"].split(" ")
            deltas = [
                {"type": "text_delta", "text": w if i == 0 else " " + w}
                for i, w in enumerate(words)
            ]
        else:
            start = {**block, "input": {}}
            text = json.dumps(block["input"])
            deltas = [
                {"type": "input_json_delta", "partial_json": text[i : i + 16]}
                for i in range(0, len(text), 16)
            ]
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": start,
            },
        )
        for delta in deltas:
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": delta,
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": full["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    """The Anthropic error body."""
    kinds = {400: "invalid_request_error", 404: "not_found_error"}
    return {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}


# --- Bedrock Converse and Gemini generateContent ------------------------------------------


def bedrock_response(
    script: Script, conversation: Conversation, reply: Reply, body: Mapping[str, Any]
) -> dict[str, Any]:
    """Render ``reply`` as a Bedrock Converse response."""
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"text": reply.text})
    for i, call in enumerate(reply.tool_calls):
        use_id = _call_id("tooluse_", script.name, conversation.turn, i)
        content.append(
            {"toolUse": {"toolUseId": use_id, "name": call.name, "input": call.arguments}}
        )
    inputs, outputs = _tokens(body.get("messages")), _tokens(content)
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if reply.tool_calls else "end_turn",
        "usage": {"inputTokens": inputs, "outputTokens": outputs, "totalTokens": inputs + outputs},
        "metrics": {"latencyMs": 1},
    }


def bedrock_error(status: int, message: str) -> dict[str, Any]:
    """The Bedrock (rest-json) error body."""
    return {"message": message}


def gemini_response(
    script: Script, conversation: Conversation, reply: Reply, body: Mapping[str, Any], model: str
) -> dict[str, Any]:
    """Render ``reply`` as a Gemini ``GenerateContentResponse`` (function calls with ids,
    as Vertex AI and newer Gemini models give them)."""
    parts: list[dict[str, Any]] = []
    if reply.text:
        parts.append({"text": reply.text})
    for i, call in enumerate(reply.tool_calls):
        call_id = _call_id("fc_", script.name, conversation.turn, i)
        parts.append({"functionCall": {"id": call_id, "name": call.name, "args": call.arguments}})
    prompt, candidates = _tokens(body.get("contents")), _tokens(parts)
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "totalTokenCount": prompt + candidates,
        },
        "modelVersion": model,
        "responseId": _digest(script.name, conversation.turn)[:24],
    }


def cohere_response(
    script: Script, conversation: Conversation, reply: Reply, body: Mapping[str, Any]
) -> dict[str, Any]:
    """Render ``reply`` as a Cohere v2 ``ChatResponse`` (its request has OpenAI's shapes)."""
    message: dict[str, Any] = {"role": "assistant"}
    if reply.text:
        message["content"] = [{"type": "text", "text": reply.text}]
    calls = _openai_message(script, conversation.turn, reply).get("tool_calls")
    if calls:
        message["tool_calls"] = calls
    inputs, outputs = _tokens(body.get("messages")), _tokens(message)
    return {
        "id": _digest(script.name, conversation.turn)[:36],
        "message": message,
        "finish_reason": "TOOL_CALL" if reply.tool_calls else "COMPLETE",
        "usage": {
            "billed_units": {"input_tokens": inputs, "output_tokens": outputs},
            "tokens": {"input_tokens": inputs, "output_tokens": outputs},
        },
    }


def cohere_error(status: int, message: str) -> dict[str, Any]:
    """The Cohere API error body."""
    return {"message": message}


def gemini_error(status: int, message: str) -> dict[str, Any]:
    """The Gemini API error body."""
    return {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}


# --- HTTP --------------------------------------------------------------------------------


_PARSERS = {
    "openai": openai_conversation,
    "anthropic": anthropic_conversation,
    "bedrock": bedrock_conversation,
    "gemini": gemini_conversation,
    "cohere": openai_conversation,  # Cohere v2 messages have OpenAI's shapes
}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("model server: " + format, *args)

    def _send_json(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_{_digest(self.path, len(data))[:16]}")
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: Iterable[tuple[str | None, Mapping[str, Any] | str]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for event, payload in events:
            data = payload if isinstance(payload, str) else json.dumps(payload)
            head = f"event: {event}\n" if event else ""
            self.wfile.write(f"{head}data: {data}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def do_POST(self) -> None:
        parts = self.path.split("?", 1)[0].strip("/").split("/", 1)
        route = parts[1] if len(parts) == 2 else ""
        model = ""
        if route == "v1/chat/completions":
            flavour, error = "openai", openai_error
        elif route == "v1/messages":
            flavour, error = "anthropic", anthropic_error
        elif route == "v2/chat":
            flavour, error = "cohere", cohere_error
        elif route.startswith("model/") and route.endswith("/converse"):
            flavour, error = "bedrock", bedrock_error
        elif route.startswith("v1beta/models/") and route.endswith(":generateContent"):
            flavour, error = "gemini", gemini_error
            model = route[len("v1beta/models/") : -len(":generateContent")]
        else:
            self._send_json(404, openai_error(404, f"no such endpoint: POST {self.path}"))
            return
        script = self.server.scripts.get(parts[0])
        if script is None:
            known = ", ".join(sorted(self.server.scripts)) or "none"
            self._send_json(404, error(404, f"unknown script {parts[0]!r} (known: {known})"))
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
            if not isinstance(body, dict):
                raise ValueError("the request body must be a JSON object")
            conversation = _PARSERS[flavour](body)
        except ValueError as exc:
            self._send_json(400, error(400, f"malformed request: {exc}"))
            return
        try:
            reply = script.reply(conversation)
        except ScriptError as exc:
            self._send_json(400, error(400, str(exc)))
            return
        except Exception as exc:  # a broken step must answer, not hang the client
            _log.exception("script %s failed", script.name)
            self._send_json(500, error(500, f"script {script.name!r} failed: {exc!r}"))
            return
        self.server.requests += 1
        if flavour == "bedrock":
            self._send_json(200, bedrock_response(script, conversation, reply, body))
        elif flavour == "gemini":
            self._send_json(200, gemini_response(script, conversation, reply, body, model))
        elif flavour == "cohere":
            self._send_json(200, cohere_response(script, conversation, reply, body))
        elif flavour == "anthropic" and body.get("stream"):
            self._send_events(anthropic_events(script, conversation, reply, body))
        elif flavour == "anthropic":
            self._send_json(200, anthropic_message(script, conversation, reply, body))
        elif body.get("stream"):
            chunks = openai_chunks(script, conversation, reply, body)
            self._send_events([*((None, c) for c in chunks), (None, "[DONE]")])
        else:
            self._send_json(200, openai_completion(script, conversation, reply, body))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, scripts: Mapping[str, Script], port: int) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.scripts = dict(scripts)
        self.requests = 0


def port_lock(port: int) -> IO[bytes] | None:
    """The open lock file of ``port``, exclusively locked (blocks while another holder has
    it; the lock goes with the file's closing or the holder's exit). None where the platform
    has no ``flock`` (Windows): the port is then taken unguarded."""
    try:
        import fcntl
    except ImportError:
        return None
    path = f"{tempfile.gettempdir()}/tracejudge-model-server-{port}.lock"
    lock = open(path, "a+b")  # noqa: SIM115 (held until stop(), closed by _release)
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
    except BaseException:
        lock.close()
        raise
    return lock


class ScriptedModelServer:
    """The scripted model server; use as a context manager or ``start()``/``stop()``.

    >>> with ScriptedModelServer({"s": script}) as server:
    ...     client = openai.OpenAI(base_url=server.openai_base_url("s"), api_key="unused")
    """

    def __init__(self, scripts: Iterable[Script], port: int = 0) -> None:
        """``port`` 0 picks a free one; a fixed port makes recorded spans reproducible."""
        self._scripts = {s.name: s for s in scripts}
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock: IO[bytes] | None = None

    def start(self) -> ScriptedModelServer:
        """Bind 127.0.0.1 (``port``, or an ephemeral one) and serve in a daemon thread.

        A fixed port is taken under a lock file (``tracejudge-model-server-PORT.lock`` in
        the temporary directory), held until ``stop()``: a second server asking for the
        same port, in this process or another (two test suites on one machine), waits for
        the first to stop instead of failing with "address already in use"."""
        if self._server is None:
            if self._port:
                self._lock = port_lock(self._port)
            try:
                self._server = _Server(self._scripts, self._port)
            except BaseException:
                self._release()
                raise
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="tracejudge-model-server",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; safe to call twice or before ``start``."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self._release()

    def _release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.close()  # closing the file drops its flock

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        if self._server is None:
            raise RuntimeError("the model server is not running")
        return int(self._server.server_address[1])

    @property
    def requests(self) -> int:
        """How many requests were answered from a script."""
        return 0 if self._server is None else self._server.requests

    def openai_base_url(self, script: str) -> str:
        """``base_url`` for ``openai.OpenAI`` that plays ``script``."""
        return f"http://127.0.0.1:{self.port}/{script}/v1"

    def mistral_server_url(self, script: str) -> str:
        """``server_url`` for a ``mistralai`` client that plays ``script`` (Mistral's chat API
        is OpenAI's Chat Completions; the SDK adds /v1/chat/completions)."""
        return f"http://127.0.0.1:{self.port}/{script}"

    def cohere_base_url(self, script: str) -> str:
        """``base_url`` for a ``cohere.ClientV2`` that plays ``script`` (the SDK adds
        /v2/chat)."""
        return f"http://127.0.0.1:{self.port}/{script}"

    def bedrock_endpoint_url(self, script: str) -> str:
        """``endpoint_url`` for a boto3 ``bedrock-runtime`` client that plays ``script``."""
        return f"http://127.0.0.1:{self.port}/{script}"

    def gemini_base_url(self, script: str) -> str:
        """``http_options.base_url`` for a ``google.genai.Client`` (api version ``v1beta``)
        that plays ``script``."""
        return f"http://127.0.0.1:{self.port}/{script}/"

    def anthropic_base_url(self, script: str) -> str:
        """``base_url`` for ``anthropic.Anthropic`` that plays ``script`` (the SDK adds /v1)."""
        return f"http://127.0.0.1:{self.port}/{script}"
