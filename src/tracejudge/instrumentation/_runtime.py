"""The runtime a patcher works with: tracer, metrics, content settings and the guard.

Why one object: every patcher (OpenAI, Anthropic, future ones) needs the same handful of
things and must treat them the same way: spans from one tracer, the two GenAI client
histograms with the conventions' bucket boundaries, one content policy (mode, redaction,
size cap) and one rule for internal errors (log them, or re-raise in tests, but never
break the user's call). Patchers receive a ``Runtime`` in ``patch(runtime)`` and keep
no other global state, so ``instrument()`` can swap it and tests can build their own.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Final

from opentelemetry import metrics, trace
from opentelemetry.metrics import Histogram, MeterProvider
from opentelemetry.trace import Span, Tracer, TracerProvider
from opentelemetry.util.types import AttributeValue

from tracejudge import __version__, semconv
from tracejudge.instrumentation._content import (
    DEFAULT_MAX_ATTRIBUTE_BYTES,
    CaptureMode,
    ContentEncoder,
    ContentStats,
    Redactor,
    parse_capture_mode,
)

logger = logging.getLogger("tracejudge.instrumentation")

SCOPE_NAME: Final = "tracejudge"
SCHEMA_URL: Final = "https://opentelemetry.io/schemas/gen-ai-dev/1.42.0-dev"

DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip

_STATIC_ENTRIES: Final = 16
"""Distinct tool lists remembered per runtime (an app has a few agents, each one list)."""

_STATIC_TEXT_CHARS: Final = 16_384
"""The longest string ``static_text`` keeps (a system prompt; a longer one is encoded each
time rather than held)."""

_INPUT_TOKEN_ATTRS: Final = {semconv.GEN_AI_TOKEN_TYPE: semconv.GenAiTokenTypeValues.INPUT}
_OUTPUT_TOKEN_ATTRS: Final = {semconv.GEN_AI_TOKEN_TYPE: semconv.GenAiTokenTypeValues.OUTPUT}


class _Guard:
    """Context manager that swallows (and logs) exceptions raised by telemetry code.

    One instance per runtime is reused: entering costs a method call, no allocation.
    """

    __slots__ = ("_runtime",)

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False
        self._runtime.internal_error(exc)
        return not self._runtime.raise_internal_errors


class Runtime:
    """Everything a patcher needs; built by ``instrument()`` (or lazily for ``@tool``).

    Attributes patchers use:

    - ``tracer``: emit spans with it (CLIENT for model calls).
    - ``duration`` / ``token_usage``: the ``gen_ai.client.operation.duration`` (s) and
      ``gen_ai.client.token.usage`` ({token}) histograms; prefer ``record_metrics``.
    - ``capture``: the message-content ``CaptureMode`` (``content_on_span``,
      ``content_on_event``, ``capture_any``: its flags, precomputed for the hot path).
    - ``capture_evidence``: whether tool arguments/results, the model's requested tool
      calls and the final answer are recorded. On by default, and in every capture mode
      (judging needs them); off only for ``instrument(capture_content=False)``, the
      explicit "no content at all" that overrides both the mode and this default.
      ``capture_content=True`` is ``SPAN_ONLY`` with evidence.
    - ``encoder``: serializes + redacts + caps a content value (``encode_content``).
    - ``guard``: ``with runtime.guard: ...`` runs telemetry code that must never raise
      into the app; errors are logged, or re-raised when ``raise_internal_errors``.
    """

    __slots__ = (
        "_seen_errors",
        "_static",
        "_texts",
        "capture",
        "capture_any",
        "capture_evidence",
        "content_on_event",
        "content_on_span",
        "duration",
        "encoder",
        "guard",
        "meter_provider",
        "raise_internal_errors",
        "redactor",
        "retired",
        "token_usage",
        "tracer",
        "tracer_provider",
    )

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: str | bool | CaptureMode | None = None,
        redact_patterns: Iterable[str] = (),
        max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
        raise_internal_errors: bool = False,
    ) -> None:
        self.tracer_provider = tracer_provider or trace.get_tracer_provider()
        self.meter_provider = meter_provider or metrics.get_meter_provider()
        self.tracer: Tracer = self.tracer_provider.get_tracer(
            SCOPE_NAME, __version__, schema_url=SCHEMA_URL
        )
        meter = self.meter_provider.get_meter(SCOPE_NAME, __version__, schema_url=SCHEMA_URL)
        self.duration: Histogram = meter.create_histogram(
            semconv.METRIC_GEN_AI_CLIENT_OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.token_usage: Histogram = meter.create_histogram(
            semconv.METRIC_GEN_AI_CLIENT_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=[float(b) for b in TOKEN_BUCKETS],
        )
        self.capture = parse_capture_mode(capture_content)
        # Precomputed: read on every call.
        self.content_on_span = self.capture.on_span
        self.content_on_event = self.capture.on_event
        self.capture_any = self.content_on_span or self.content_on_event
        # False (the bool) is the one explicit "no content at all"; see the class docstring.
        self.capture_evidence = capture_content is not False
        self.redactor = Redactor(redact_patterns)
        self.retired = False
        """Set by ``uninstrument()``: a wrapper that outlived its patch (an SDK object that
        bound the patched method, such as openai's cached ``with_raw_response``) then
        passes calls through untraced instead of tracing after the user turned it off."""
        self.encoder = ContentEncoder(self.redactor, max_attribute_bytes)
        self.raise_internal_errors = raise_internal_errors
        self.guard = _Guard(self)
        self._seen_errors: set[str] = set()
        self._static: dict[int, StaticContent] = {}
        self._texts: dict[str, StaticContent] = {}

    # --- errors ----------------------------------------------------------------

    def internal_error(self, exc: BaseException) -> None:
        """Log an error of tracejudge's own telemetry code (never the user's error).

        Re-raising is decided by the caller (``guard`` does it when
        ``raise_internal_errors`` is set); this only logs: a warning with the traceback
        the first time an error is seen, at debug level afterwards (a telemetry bug on
        every call must not flood the application's logs).
        """
        key = f"{type(exc).__qualname__}:{str(exc)[:200]}"
        if key in self._seen_errors:
            logger.debug("tracejudge: internal telemetry error (again): %r", exc)
            return
        if len(self._seen_errors) < 256:
            self._seen_errors.add(key)
        logger.warning("tracejudge: internal telemetry error (ignored): %r", exc, exc_info=exc)

    # --- content ---------------------------------------------------------------

    def encode_content(self, value: Any, stats: ContentStats, *, as_json: bool = True) -> str:
        """Serialize, redact and cap ``value`` for a content attribute; updates ``stats``."""
        return self.encoder.encode(value, stats, as_json=as_json)

    def static(self, source: Any, convert: Callable[[Any], Any]) -> StaticContent:
        """``convert(source)``, remembered for sources passed unchanged on every call
        (tool definitions: agents pass the same list each time), with its encoded text
        once ``encode_static_entry`` made it.

        Why: converting, serializing and redacting the tool list was a fifth of a
        traced call's cost (and the converted definitions are needed on every call
        for the tool-call ledger, content capture or not). The entry is keyed by the
        source object's identity and used only while the source still equals a deep
        copy taken when it was converted (and for the same ``convert``), so a list
        mutated in place is converted afresh. The converted value is shared by the
        calls that hit: it must be read, never changed.
        """
        key = id(source)
        hit = self._static.get(key)
        if (
            hit is not None
            and hit.source is source
            and hit.convert is convert
            and _still_equal(hit.snapshot, source)
        ):
            return hit
        entry = StaticContent(source, convert, convert(source))
        try:
            entry.snapshot = copy.deepcopy(source)
        except Exception:  # an uncopyable source is simply not remembered
            return entry
        if len(self._static) >= _STATIC_ENTRIES:
            self._static.clear()
        self._static[key] = entry
        return entry

    def static_text(self, text: str, convert: Callable[[str], Any]) -> StaticContent:
        """``static`` for a string source (a system instruction given as one string,
        usually the same on every call), remembered by its value: a string cannot change,
        so no copy or deep comparison is needed. Strings over ``_STATIC_TEXT_CHARS`` are
        converted each time, not kept."""
        hit = self._texts.get(text)
        if hit is not None and hit.convert is convert:
            return hit
        entry = StaticContent(text, convert, convert(text))
        if len(text) <= _STATIC_TEXT_CHARS:
            if len(self._texts) >= _STATIC_ENTRIES:
                self._texts.clear()
            self._texts[text] = entry
        return entry

    def encode_static_entry(self, entry: StaticContent, stats: ContentStats) -> str | None:
        """``encode_content(entry.value)``, encoded once per entry; what redaction and
        truncation did is added to ``stats`` on every use. ``None`` when the converted
        value is empty."""
        if not entry.encoded:
            local = ContentStats()
            entry.text = self.encode_content(entry.value, local) if entry.value else None
            entry.redacted, entry.truncated = local.redacted, local.truncated
            entry.encoded = True
        stats.redacted += entry.redacted
        stats.truncated = stats.truncated or entry.truncated
        return entry.text

    def encode_static(
        self, source: Any, convert: Callable[[Any], Any], stats: ContentStats
    ) -> str | None:
        """``encode_content(convert(source))``, remembered (see ``static``). ``None``
        when ``convert`` gives nothing."""
        return self.encode_static_entry(self.static(source, convert), stats)

    @staticmethod
    def stamp_content_stats(span: Span, stats: ContentStats) -> None:
        """Set ``tracejudge.content.redacted``/``.truncated`` when anything happened."""
        if stats.redacted:
            span.set_attribute(semconv.TRACEJUDGE_CONTENT_REDACTED, stats.redacted)
        if stats.truncated:
            span.set_attribute(semconv.TRACEJUDGE_CONTENT_TRUNCATED, True)

    # --- metrics ---------------------------------------------------------------

    def record_metrics(
        self,
        duration_s: float,
        attributes: Mapping[str, AttributeValue],
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> None:
        """Record one operation's duration and (when known) its token counts.

        ``attributes`` are the metric attributes of the conventions (operation, provider,
        request/response model, server address/port, ``error.type`` on failure); the
        span's context is current so exemplars link to it.
        """
        self.duration.record(duration_s, attributes)
        if input_tokens is not None:
            self.token_usage.record(input_tokens, {**attributes, **_INPUT_TOKEN_ATTRS})
        if output_tokens is not None:
            self.token_usage.record(output_tokens, {**attributes, **_OUTPUT_TOKEN_ATTRS})


class StaticContent:
    """One remembered conversion of a static source (see ``Runtime.static``)."""

    __slots__ = (
        "convert",
        "encoded",
        "redacted",
        "snapshot",
        "source",
        "text",
        "truncated",
        "value",
    )

    def __init__(self, source: Any, convert: Callable[[Any], Any], value: Any) -> None:
        self.source = source
        self.convert = convert
        self.value = value
        self.snapshot: Any = None
        self.encoded = False
        self.text: str | None = None
        self.redacted = 0
        self.truncated = False


def _still_equal(snapshot: Any, source: Any) -> bool:
    try:
        return bool(snapshot == source)
    except Exception:  # a broken __eq__: treat as changed
        return False


_current: Runtime | None = None


def get_runtime() -> Runtime:
    """The active runtime: the one ``instrument()`` installed, else a default one.

    The default uses the global providers and the environment's capture mode, so
    ``@tool``/``agent()`` work without ``instrument()``.
    """
    global _current
    rt = _current
    if rt is None:
        rt = _current = Runtime()
    return rt


def current_runtime() -> Runtime | None:
    """The runtime ``instrument()`` set, if any (never creates one)."""
    return _current


def set_runtime(runtime: Runtime | None) -> None:
    """Install (or clear) the active runtime; used by ``instrument()``/``uninstrument()``."""
    global _current
    _current = runtime
