"""One model call's telemetry, independent of the SDK: ``ModelCallTelemetry``.

Why: patchers should only translate SDK objects; everything the conventions say about
the span (name, kind, status, ``error.type``), the content attributes (capture mode,
redaction, caps, the ``tool_call`` parts the judge depends on), the metrics and the
tool-call ledger lives here once. A patcher creates one object per call, feeds it the
request, the response (or stream accumulation) and ends it exactly once.

Content policy (a decision the conventions leave to us): in ``NO_CONTENT`` mode the
output messages are still recorded but reduced to their ``tool_call`` parts (id, name,
arguments; redacted and capped), because which tools the model asked for, with which
arguments, is what trajectory rules and the tool-call-id join need; text content is
recorded only in the SPAN_* modes.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping, Sequence
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from tracejudge import semconv
from tracejudge.instrumentation._content import ContentStats
from tracejudge.instrumentation._context import (
    AGENT_STATE,
    PendingToolCall,
    record_requested_tool_calls,
)
from tracejudge.instrumentation._runtime import Runtime

_METRIC_KEYS: Final = (
    semconv.GEN_AI_OPERATION_NAME,
    semconv.GEN_AI_PROVIDER_NAME,
    semconv.GEN_AI_REQUEST_MODEL,
    semconv.SERVER_ADDRESS,
    semconv.SERVER_PORT,
)
_STATUS_DESCRIPTION_MAX: Final = 512


def error_type_of(exc: BaseException) -> str:
    """``error.type`` for an exception: the HTTP status code when the error carries one
    (low-cardinality, what the conventions suggest for API errors), else the fully
    qualified exception class name."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool) and 400 <= status < 600:
        return str(status)
    # (a 2xx an SDK could not read, mistralai's "Unexpected response received", is no
    # HTTP error: its class names it)
    code = getattr(exc, "code", None)  # google-genai's APIError, urllib's HTTPError
    if not isinstance(code, int):  # botocore's ClientError: its parsed error response
        response = getattr(exc, "response", None)
        meta = response.get("ResponseMetadata") if isinstance(response, Mapping) else None
        code = meta.get("HTTPStatusCode") if isinstance(meta, Mapping) else None
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code < 600:
        return str(code)
    return exception_class_name(exc)


def exception_class_name(exc: BaseException) -> str:
    """The fully qualified class name core asks for in ``exception.type``."""
    cls = type(exc)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def record_exception(span: Span, exc: BaseException) -> None:
    """Add the core ``exception`` span event: type, message and stack trace.

    Not the SDK's ``Span.record_exception``: it also sets ``exception.escaped``, deprecated
    in the core conventions (and written as a string), the only violations a Weaver live
    check found in our spans.
    """
    span.add_event(
        semconv.EVENT_EXCEPTION,
        {
            semconv.EXCEPTION_TYPE: exception_class_name(exc),
            semconv.EXCEPTION_MESSAGE: str(exc),
            semconv.EXCEPTION_STACKTRACE: "".join(
                traceback.format_exception(type(exc), exc, exc.__traceback__)
            ),
        },
    )


def set_error(span: Span, exc: BaseException) -> str:
    """Mark ``span`` failed per core "Recording Errors"; returns the ``error.type``."""
    etype = error_type_of(exc)
    span.set_attribute(semconv.ERROR_TYPE, etype)
    record_exception(span, exc)
    description = str(exc)[:_STATUS_DESCRIPTION_MAX] or type(exc).__name__
    span.set_status(Status(StatusCode.ERROR, description))
    return etype


def text_part(content: str) -> dict[str, Any]:
    """A ``text`` message part."""
    return {"type": "text", "content": content}


def tool_call_part(call_id: str | None, name: str, arguments: Any) -> dict[str, Any]:
    """A ``tool_call`` part (arguments preferably parsed JSON)."""
    part: dict[str, Any] = {"type": "tool_call", "name": name}
    if call_id is not None:
        part["id"] = call_id
    if arguments is not None:
        part["arguments"] = arguments
    return part


def tool_call_response_part(call_id: str | None, response: Any) -> dict[str, Any]:
    """A ``tool_call_response`` part."""
    part: dict[str, Any] = {"type": "tool_call_response", "response": response}
    if call_id is not None:
        part["id"] = call_id
    return part


def message(
    role: str, parts: list[dict[str, Any]], finish_reason: str | None = None
) -> dict[str, Any]:
    """A ``ChatMessage``/``OutputMessage`` dict."""
    msg: dict[str, Any] = {"role": role, "parts": parts}
    if finish_reason is not None:
        msg["finish_reason"] = finish_reason
    return msg


class ModelCallTelemetry:
    """Span + metrics for one model call (chat, embeddings, responses...).

    Lifecycle: ``__init__`` starts the CLIENT span (sampling-relevant attributes set at
    creation); ``activate()``/``deactivate()`` make it current while the SDK runs; the
    patcher calls ``set_*`` with what it learned; ``end()`` or ``fail(exc)`` finishes it.

    Ending is idempotent and thread-safe: stream finalisers may race (exhaustion, close,
    and ``weakref.finalize`` on the garbage collector's thread). The right to end is one
    token in a list, taken with ``list.pop()`` (atomic in CPython), so exactly one
    caller ends the span and records the metrics, with no lock on the hot path. A caller
    that must record something *before* ending (a stream's accumulated response) takes
    the token first with ``claim()`` and then ends with ``claimed=True``, so a racing
    finaliser cannot record a second, partial result.
    """

    __slots__ = (
        "_attrs",
        "_end_token",
        "_event",
        "_token",
        "input_tokens",
        "metric_attributes",
        "offered_tools",
        "output_tokens",
        "runtime",
        "span",
        "start",
        "stats",
    )

    def __init__(
        self,
        runtime: Runtime,
        operation: str,
        provider: str,
        request_model: str | None,
        attributes: dict[str, AttributeValue],
        server_address: str | None = None,
        server_port: int | None = None,
        offered_tools: Any = None,
    ) -> None:
        self.runtime = runtime
        self.offered_tools = offered_tools
        """The request's tool definitions as the SDK took them: handed to the tool-call
        ledger with the response's tool calls (their descriptions go on the tool spans)."""
        attributes[semconv.GEN_AI_OPERATION_NAME] = operation
        attributes[semconv.GEN_AI_PROVIDER_NAME] = provider
        metric: dict[str, AttributeValue] = {
            semconv.GEN_AI_OPERATION_NAME: operation,
            semconv.GEN_AI_PROVIDER_NAME: provider,
        }
        if request_model:
            attributes[semconv.GEN_AI_REQUEST_MODEL] = request_model
            metric[semconv.GEN_AI_REQUEST_MODEL] = request_model
        if server_address:
            attributes[semconv.SERVER_ADDRESS] = server_address
            metric[semconv.SERVER_ADDRESS] = server_address
            if server_port is not None:
                attributes[semconv.SERVER_PORT] = server_port
                metric[semconv.SERVER_PORT] = server_port
        self.metric_attributes = metric
        agent_state = AGENT_STATE.get()
        if agent_state is not None:
            agent_state.providers.add(provider)
        name = f"{operation} {request_model}" if request_model else operation
        self.span = runtime.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
        self.start = time.perf_counter()
        self.stats = ContentStats()
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self._token: object | None = None
        self._event: dict[str, AttributeValue] | None = None
        self._end_token: list[None] = [None]
        # Attributes learned during the call, set on the span in one call at the end
        # (each ``set_attributes`` takes the span's lock and validates: fewer is cheaper).
        self._attrs: dict[str, AttributeValue] = {}

    # --- context -----------------------------------------------------------------

    def activate(self) -> None:
        """Make the span current (children such as HTTP spans nest under it)."""
        self._token = otel_context.attach(trace.set_span_in_context(self.span))

    def deactivate(self) -> None:
        """Undo ``activate()``; call in the same thread/task, before returning."""
        token = self._token
        if token is not None:
            self._token = None
            otel_context.detach(token)  # type: ignore[arg-type]

    # --- response ----------------------------------------------------------------

    def set_response(
        self,
        *,
        response_id: str | None = None,
        response_model: str | None = None,
        finish_reasons: Sequence[str] | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        extra: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        """Record the response attributes the conventions recommend (set at the end)."""
        attrs = self._attrs
        if extra:
            attrs.update(extra)
        if response_id:
            attrs[semconv.GEN_AI_RESPONSE_ID] = response_id
        if response_model:
            attrs[semconv.GEN_AI_RESPONSE_MODEL] = response_model
            self.metric_attributes[semconv.GEN_AI_RESPONSE_MODEL] = response_model
        if finish_reasons:
            attrs[semconv.GEN_AI_RESPONSE_FINISH_REASONS] = tuple(finish_reasons)
        if input_tokens is not None:
            attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] = input_tokens
            self.input_tokens = input_tokens
        if output_tokens is not None:
            attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] = output_tokens
            self.output_tokens = output_tokens

    def set_input(
        self,
        messages: list[dict[str, Any]] | None,
        system_instructions: list[dict[str, Any]] | str | None = None,
        tool_definitions: list[dict[str, Any]] | str | None = None,
    ) -> None:
        """Record input content per the capture mode (nothing in NO_CONTENT).

        ``system_instructions`` and ``tool_definitions`` may come already encoded
        (``Runtime.encode_static_entry``)."""
        if not self.runtime.capture_any:
            return
        attrs: dict[str, AttributeValue] = {}
        enc = self.runtime.encode_content
        if messages:
            attrs[semconv.GEN_AI_INPUT_MESSAGES] = enc(messages, self.stats)
        if isinstance(system_instructions, str):
            attrs[semconv.GEN_AI_SYSTEM_INSTRUCTIONS] = system_instructions
        elif system_instructions:
            attrs[semconv.GEN_AI_SYSTEM_INSTRUCTIONS] = enc(system_instructions, self.stats)
        if isinstance(tool_definitions, str):
            attrs[semconv.GEN_AI_TOOL_DEFINITIONS] = tool_definitions
        elif tool_definitions:
            attrs[semconv.GEN_AI_TOOL_DEFINITIONS] = enc(tool_definitions, self.stats)
        self._emit_content(attrs)

    def set_output(
        self,
        messages: list[dict[str, Any]],
        tool_calls: Sequence[PendingToolCall] = (),
        *,
        record_tool_calls: bool = True,
    ) -> None:
        """Record the output messages (see the module's content policy) and hand the
        requested tool calls to the ledger so ``@tool`` spans can pick up their ids."""
        if record_tool_calls:
            record_requested_tool_calls(tool_calls, self.offered_tools)
        if not messages:
            return
        if self.runtime.capture_any:
            attrs: dict[str, AttributeValue] = {
                semconv.GEN_AI_OUTPUT_MESSAGES: self.runtime.encode_content(messages, self.stats)
            }
            self._emit_content(attrs)
            return
        if not tool_calls or not self.runtime.capture_evidence:
            return
        reduced = [
            {"role": m.get("role", "assistant"), "parts": tc_parts}
            for m in messages
            if (tc_parts := [p for p in m.get("parts", ()) if p.get("type") == "tool_call"])
        ]
        if reduced:
            self._attrs[semconv.GEN_AI_OUTPUT_MESSAGES] = self.runtime.encode_content(
                reduced, self.stats
            )

    def _emit_content(self, attrs: dict[str, AttributeValue]) -> None:
        if not attrs:
            return
        if self.runtime.content_on_span:
            self._attrs.update(attrs)
        if self.runtime.content_on_event:
            # One details event per operation, emitted when the call ends.
            if self._event is None:
                self._event = {}
            self._event.update(attrs)

    # --- end ---------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        """Whether the right to end was taken (``end``/``fail``/``abandon``/``claim``)."""
        return not self._end_token

    def claim(self) -> bool:
        """Take the right to end this call: True for exactly one caller, ever.

        The winner must then call ``end``/``fail``/``abandon`` with ``claimed=True``.
        """
        try:
            self._end_token.pop()
        except IndexError:
            return False
        return True

    def end(self, *, claimed: bool = False) -> None:
        """Finish successfully: content stats, metrics, span end. Idempotent."""
        if not claimed and not self.claim():
            return
        if self._attrs:
            self.span.set_attributes(self._attrs)
        if self._event:
            # The event stands for the operation on its own (it can be exported as a log
            # record): it carries the operation's identifying attributes, two of which
            # (operation and provider name) the convention requires, then the content.
            self.span.add_event(
                semconv.EVENT_GEN_AI_CLIENT_INFERENCE_OPERATION_DETAILS,
                {**self.metric_attributes, **self._event},
            )
        self.runtime.stamp_content_stats(self.span, self.stats)
        self.runtime.record_metrics(
            time.perf_counter() - self.start,
            self.metric_attributes,
            self.input_tokens,
            self.output_tokens,
        )
        self.span.end()

    def fail(self, exc: BaseException, *, claimed: bool = False) -> None:
        """Finish with status ERROR and ``error.type``. Idempotent."""
        if not claimed and not self.claim():
            return
        etype = set_error(self.span, exc)
        self.metric_attributes[semconv.ERROR_TYPE] = etype
        self.end(claimed=True)

    def abandon(
        self, error_type: str = "_OTHER", description: str = "", *, claimed: bool = False
    ) -> None:
        """Finish a call whose result was dropped unfinished (e.g. a stream closed early).

        The span keeps what was accumulated; status stays unset unless ``description``
        is given: closing a stream early is the caller's choice, not a failure.
        """
        if not claimed and not self.claim():
            return
        if description:
            self.mark_error(error_type, description)
        self.end(claimed=True)

    def mark_error(self, error_type: str, description: str) -> None:
        """Set status ERROR and ``error.type`` (span and metrics) without ending: for an
        error the response itself reports (a stream's error event)."""
        self.span.set_attribute(semconv.ERROR_TYPE, error_type)
        self.span.set_status(Status(StatusCode.ERROR, description))
        self.metric_attributes[semconv.ERROR_TYPE] = error_type
