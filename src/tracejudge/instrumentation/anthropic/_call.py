"""One traced Anthropic ``messages`` call: request → span → response or stream → end.

Why a class per call: a streamed response ends long after ``create`` returned and may
end from several places (exhaustion, an error event, ``close()``, an early ``break``,
garbage collection — possibly on another thread). This object owns the span through
``ModelCallTelemetry``, folds stream events into a Message, and makes the first end
win under a lock. Every method that runs on the application's path is wrapped in the
runtime's guard: telemetry errors are logged, never raised into the app.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Mapping
from contextvars import Token
from typing import Any

from opentelemetry.util.types import AttributeValue

from tracejudge import semconv as sc
from tracejudge.instrumentation._content import to_jsonable
from tracejudge.instrumentation._context import PendingToolCall, should_skip_model_span
from tracejudge.instrumentation._genai import ModelCallTelemetry, record_exception
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation.anthropic import _convert as cv
from tracejudge.instrumentation.anthropic._stream import MessageAccumulator, observe_stream
from tracejudge.instrumentation.anthropic._suppress import restore_sdk_span, suppress_sdk_span


def server_of(resource: Any) -> tuple[str | None, int | None]:
    """``server.address``/``server.port`` from the client's base URL (scheme default
    port when the URL names none, as the conventions require a port with an address)."""
    url = getattr(getattr(resource, "_client", None), "base_url", None)
    host = getattr(url, "host", None)
    if not isinstance(host, str) or not host:
        return None, None
    port = getattr(url, "port", None)
    if not isinstance(port, int):
        port = 80 if getattr(url, "scheme", "https") == "http" else 443
    return host, port


def provider_of(resource: Any) -> str:
    """``gen_ai.provider.name`` for the client behind ``resource``.

    The same Messages resource serves Anthropic's API, Bedrock and Vertex AI; the
    conventions name the provider the client talks to. 2.x clients declare it
    (``_gen_ai_provider_name``); older ones are told apart by their class.
    """
    client = getattr(resource, "_client", None)
    declared = getattr(client, "_gen_ai_provider_name", None)
    if isinstance(declared, str) and declared:
        return declared
    name = type(client).__name__
    if "Bedrock" in name:
        return sc.GenAiProviderNameValues.AWS_BEDROCK
    if "Vertex" in name:
        return sc.GenAiProviderNameValues.GCP_VERTEX_AI
    return sc.GenAiProviderNameValues.ANTHROPIC


def conversation_of(resource: Any) -> str | None:
    """The conversation id the application gave the SDK (2.x ``open_telemetry=
    {"conversation_id": ...}``): ours replaces the SDK's span, so it must carry the id
    the SDK's would have. Never synthesised, as the conventions require."""
    options = getattr(getattr(resource, "_client", None), "open_telemetry", None)
    conversation = options.get("conversation_id") if isinstance(options, Mapping) else None
    return conversation if isinstance(conversation, str) and conversation else None


def tool_calls_of(message: Any) -> list[PendingToolCall]:
    """The client tool calls (``tool_use`` blocks) a Message asks for, for the ledger."""
    calls: list[PendingToolCall] = []
    content = cv.get(message, "content")
    if not isinstance(content, list):
        return calls
    for block in content:
        if cv.get(block, "type") != "tool_use":
            continue
        call_id, name = cv.get(block, "id"), cv.get(block, "name")
        if isinstance(call_id, str) and isinstance(name, str):
            calls.append(PendingToolCall(call_id, name, to_jsonable(cv.get(block, "input"))))
    return calls


def stream_error_type(error: BaseException) -> str | None:
    """``error.type`` of an ``error`` event inside a 200 stream: the API's error type.

    The SDK raises it as an ``APIStatusError`` carrying the stream's status (200), which
    as an ``error.type`` would read as success; the envelope's ``overloaded_error`` &
    co. are the low-cardinality, provider-defined class the conventions ask for.
    """
    status = getattr(error, "status_code", None)
    if not isinstance(status, int) or status >= 400:
        return None
    kind = cv.get(cv.get(getattr(error, "body", None), "error"), "type")
    return kind if isinstance(kind, str) and kind else None


class AnthropicCall:
    """Span lifecycle of one call; also the ``StreamObserver`` of its stream."""

    def __init__(
        self, runtime: Runtime, resource: Any, kwargs: Mapping[str, Any], stream: bool
    ) -> None:
        self.runtime = runtime
        params = cv.request_params(kwargs)
        address, port = server_of(resource)
        model = params.get("model")
        attributes = cv.request_attributes(params, stream=stream)
        conversation = conversation_of(resource)
        if conversation is not None:
            attributes[sc.GEN_AI_CONVERSATION_ID] = conversation
        self.telemetry = ModelCallTelemetry(
            runtime,
            sc.GenAiOperationNameValues.CHAT,
            provider_of(resource),
            model if isinstance(model, str) else None,
            attributes,
            server_address=address,
            server_port=port,
        )
        self.stream = stream
        self.start_ns = time.time_ns()
        self._lock = threading.RLock()  # a GC finaliser may re-enter on this thread
        self._acc: MessageAccumulator | None = None
        self._first_chunk = False
        self._sdk_token: Token[bool] | None = None
        if runtime.capture_any:  # nothing is recorded in NO_CONTENT: skip converting
            tools = params.get("tools")
            with runtime.guard:  # the span exists now: odd content must not orphan it
                self.telemetry.set_input(
                    cv.input_messages(params.get("messages")),
                    cv.system_instructions(params.get("system")),
                    runtime.encode_static(tools, cv.tool_definitions, self.telemetry.stats)
                    if isinstance(tools, (list, tuple))
                    else cv.tool_definitions(tools),  # other iterables: converted each time
                )

    @classmethod
    def start(
        cls, runtime: Runtime, resource: Any, kwargs: Mapping[str, Any], *, stream: bool
    ) -> AnthropicCall | None:
        """A started call, or None when no span belongs here (suppressed, nested in
        another model span) or starting failed (logged by the guard)."""
        with runtime.guard:
            if should_skip_model_span():
                return None
            return cls(runtime, resource, kwargs, stream)
        return None

    # --- while the SDK sends the request -------------------------------------------

    def enter(self) -> None:
        """Make our span current and switch the SDK's own span off for this call."""
        with self.runtime.guard:
            self.telemetry.activate()
            self._sdk_token = suppress_sdk_span()

    def exit(self) -> None:
        """Undo ``enter()`` (same thread/task)."""
        with self.runtime.guard:
            token, self._sdk_token = self._sdk_token, None
            if token is not None:
                restore_sdk_span(token)
            self.telemetry.deactivate()

    # --- results -----------------------------------------------------------------

    def returned(self, result: Any, *, is_async: bool) -> None:
        """The SDK call returned: a Message, a stream, or a raw-response wrapper."""
        with self.runtime.guard:
            if not self._record_result(result, is_async=is_async):
                parsed = self._raw_parse(result)
                if inspect.isawaitable(parsed):  # defensive: never leave a coroutine
                    getattr(parsed, "close", lambda: None)()
                    parsed = None
                self._record_result(parsed, is_async=is_async)
        self._end_if_unwatched()

    async def returned_async(self, result: Any) -> None:
        """``returned`` for async clients, whose raw responses parse asynchronously."""
        with self.runtime.guard:
            if not self._record_result(result, is_async=True):
                parsed = self._raw_parse(result)
                if inspect.isawaitable(parsed):
                    parsed = await parsed
                self._record_result(parsed, is_async=True)
        self._end_if_unwatched()

    def _record_result(self, result: Any, *, is_async: bool) -> bool:
        """Record a Message or start watching a stream; False for anything else."""
        if result is None:
            return False
        if cv.get(result, "type") == "message" and cv.get(result, "content") is not None:
            self._finish(result, complete=True)
            return True
        if hasattr(result, "response") and (
            hasattr(result, "__iter__") or hasattr(result, "__aiter__")
        ):
            self.watch(result, is_async=is_async)
            return True
        return False

    def _raw_parse(self, result: Any) -> Any:
        """The parsed body of a ``with_raw_response`` result, when reading it is free.

        The SDK caches ``parse()``, so the application later gets the same Message or
        the same (now observed) Stream. A ``with_streaming_response`` body that is still
        unread belongs to the application and is left alone: the span then keeps only
        the request side.
        """
        http = getattr(result, "http_response", None)
        parse = getattr(result, "parse", None)
        if http is None or not callable(parse):
            return None
        if not (self.stream or getattr(http, "is_closed", False) is True):
            return None
        return parse()

    def _end_if_unwatched(self) -> None:
        """End now unless a stream took over the span (also after a guarded failure)."""
        with self.runtime.guard:
            if self._acc is None and not self.telemetry.ended:
                self.telemetry.end()

    def watch(self, stream: Any, *, is_async: bool) -> None:
        """Observe a raw event stream; end now if it cannot be observed."""
        with self.runtime.guard:
            self._acc = MessageAccumulator()
            if not observe_stream(stream, self, is_async=is_async):
                self.telemetry.end()

    def failed(self, exc: BaseException) -> None:
        """The call raised before returning (HTTP error, connection, validation...)."""
        with self.runtime.guard, self._lock:
            if isinstance(exc, Exception):
                self.telemetry.fail(exc)
            else:  # cancelled / interrupted: the caller stopped it, not an error
                self.telemetry.abandon()

    def _finish(self, message: Any, *, complete: bool) -> None:
        with self._lock:
            if self.telemetry.ended:
                return
            self._record(message, complete=complete)
            self.telemetry.end()

    def _record(self, message: Any, *, complete: bool) -> None:
        attrs = cv.response_attributes(message)
        extra: dict[str, AttributeValue] = {
            k: v
            for k, v in attrs.items()
            if k
            not in (
                sc.GEN_AI_RESPONSE_ID,
                sc.GEN_AI_RESPONSE_MODEL,
                sc.GEN_AI_RESPONSE_FINISH_REASONS,
                sc.GEN_AI_USAGE_INPUT_TOKENS,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS,
            )
        }
        reasons = attrs.get(sc.GEN_AI_RESPONSE_FINISH_REASONS)
        in_tok, out_tok = (
            attrs.get(sc.GEN_AI_USAGE_INPUT_TOKENS),
            attrs.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS),
        )
        rid, rmodel = attrs.get(sc.GEN_AI_RESPONSE_ID), attrs.get(sc.GEN_AI_RESPONSE_MODEL)
        self.telemetry.set_response(
            response_id=rid if isinstance(rid, str) else None,
            response_model=rmodel if isinstance(rmodel, str) else None,
            finish_reasons=list(reasons) if isinstance(reasons, (list, tuple)) else None,
            input_tokens=in_tok if isinstance(in_tok, int) else None,
            output_tokens=out_tok if isinstance(out_tok, int) else None,
            extra=extra,
        )
        output = cv.output_messages(message)
        if complete or output[0]["parts"]:
            self.telemetry.set_output(
                output, tool_calls_of(message) if complete else (), record_tool_calls=complete
            )

    # --- StreamObserver ------------------------------------------------------------

    def on_event(self, event: Any) -> None:
        with self.runtime.guard:
            if not self._first_chunk:
                self._first_chunk = True
                ttfc = (time.time_ns() - self.start_ns) / 1e9
                self.telemetry.span.set_attribute(sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, ttfc)
            if self._acc is not None:
                self._acc.add(event)

    def on_done(self) -> None:
        with self.runtime.guard:
            acc = self._acc
            if acc is None or not acc.started:
                # A stream that ended without message_start: nothing was generated.
                self._end_partial()
                return
            self._finish(acc.message, complete="stop_reason" in acc.message)

    def on_error(self, error: BaseException) -> None:
        with self.runtime.guard, self._lock:
            if self.telemetry.ended:
                return
            if self._acc is not None and self._acc.started:
                self._record(self._acc.message, complete=False)
            envelope = stream_error_type(error)
            if envelope is None:
                self.telemetry.fail(error)
                return
            record_exception(self.telemetry.span, error)
            self.telemetry.abandon(envelope, str(error)[:512] or envelope)

    def on_close(self) -> None:
        with self.runtime.guard:
            self._end_partial()

    def _end_partial(self) -> None:
        """Closed or abandoned before the end: keep what arrived, status unset."""
        with self._lock:
            if self.telemetry.ended:
                return
            if self._acc is not None and self._acc.started:
                self._record(self._acc.message, complete=False)
            self.telemetry.abandon()
