"""Content capture: which message content goes where, secret redaction, size caps, JSON.

Why this module exists: judging needs what the agent said and did (tool arguments,
results, the final answer), but that content is sensitive and can be large. Every
content attribute therefore passes through one encoder that (1) turns arbitrary Python
values into the JSON shapes of the GenAI conventions, never raising (``repr()`` is the
fallback), (2) redacts secrets before they leave the process, and (3) caps each
attribute's size, so one base64 image cannot break the exporter.

Message content (chat history, model output text) follows the OpenTelemetry mode
variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``; tool arguments/results
and the agent's final answer are captured regardless (redacted and capped) because the
judge cannot work without them.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from tracejudge.redaction import _DEFAULT_PATTERN_KEYWORDS as _DEFAULT_PATTERN_KEYWORDS
from tracejudge.redaction import DEFAULT_REDACT_PATTERNS as DEFAULT_REDACT_PATTERNS
from tracejudge.redaction import REDACTED as REDACTED
from tracejudge.redaction import Redactor as Redactor

CAPTURE_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The conventional environment variable naming the message-content capture mode."""

DEFAULT_MAX_ATTRIBUTE_BYTES: Final = 32_768
"""Default cap (UTF-8 bytes) for one content attribute; large enough for typical tool
results, small enough that OTLP exporters and backends accept the span."""

TRUNCATION_MARK: Final = "…[truncated]"


class CaptureMode(enum.Enum):
    """Where message content is recorded (the util-genai values)."""

    NO_CONTENT = "NO_CONTENT"
    SPAN_ONLY = "SPAN_ONLY"
    EVENT_ONLY = "EVENT_ONLY"
    SPAN_AND_EVENT = "SPAN_AND_EVENT"

    @property
    def on_span(self) -> bool:
        """Whether message content goes on span attributes."""
        return self is CaptureMode.SPAN_ONLY or self is CaptureMode.SPAN_AND_EVENT

    @property
    def on_event(self) -> bool:
        """Whether message content goes on a ``gen_ai.client.inference.operation.details`` event."""
        return self is CaptureMode.EVENT_ONLY or self is CaptureMode.SPAN_AND_EVENT


_TRUTHY = frozenset({"true", "1", "yes", "on"})
_FALSY = frozenset({"false", "0", "no", "off", ""})


def parse_capture_mode(value: str | bool | CaptureMode | None) -> CaptureMode:
    """Turn a mode name, a boolean or ``None`` (read the environment) into a ``CaptureMode``.

    Accepts the four util-genai names (case-insensitive) and the older true/false form
    (true means SPAN_ONLY). An unknown value given as an argument raises ``ValueError``
    naming the accepted ones: a typo must not silently turn capture off or on. An unknown
    value in the environment variable is logged as a warning and means ``NO_CONTENT`` (the
    private choice): the variable is read lazily, even from inside the application's own
    tool calls, where raising would break the application.
    """
    if isinstance(value, CaptureMode):
        return value
    if isinstance(value, bool):
        return CaptureMode.SPAN_ONLY if value else CaptureMode.NO_CONTENT
    if value is None:
        env = os.environ.get(CAPTURE_ENV, "")
        try:
            return parse_capture_mode(env)
        except ValueError as exc:
            logging.getLogger(__name__).warning(
                "tracejudge: %s=%r is not valid (%s); capturing no message content",
                CAPTURE_ENV,
                env,
                exc,
            )
            return CaptureMode.NO_CONTENT
    text = value.strip()
    upper = text.upper()
    for mode in CaptureMode:
        if mode.value == upper:
            return mode
    lower = text.lower()
    if lower in _TRUTHY:
        return CaptureMode.SPAN_ONLY
    if lower in _FALSY:
        return CaptureMode.NO_CONTENT
    accepted = ", ".join(m.value for m in CaptureMode)
    raise ValueError(
        f"unknown message-content capture mode {value!r}; use one of {accepted}, true or false"
    )


# --- redaction -----------------------------------------------------------------
# The detectors live in ``tracejudge.redaction``, shared with the ``sensitive_data`` check
# and the collector; re-exported here for the instrumentation's users.

# --- JSON ----------------------------------------------------------------------


def to_jsonable(value: Any) -> Any:
    """Best-effort conversion of SDK objects (pydantic models, dataclasses) to JSON data.

    Never raises: anything it cannot convert becomes its ``repr()``.
    """
    try:
        return _to_jsonable(value, 0)
    except Exception:  # the fallback *is* the error handling
        return _safe_repr(value)


def _to_jsonable(value: Any, depth: int) -> Any:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if depth > 32:
        return _safe_repr(value)
    cls = type(value)
    if cls is dict:  # the common containers first: exact-type checks, no ABC check
        return {str(k): _to_jsonable(v, depth + 1) for k, v in value.items()}
    if cls is list:
        return [_to_jsonable(v, depth + 1) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _to_jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_to_jsonable(v, depth + 1) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _to_jsonable(dump(mode="json", exclude_none=True), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _to_jsonable(dataclasses.asdict(value), depth + 1)
    return _safe_repr(value)


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # a broken __repr__ must not break the app
        return f"<unrepresentable {type(value).__name__}>"


_COMPACT: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=True)
"""Built once: ``json.dumps`` with non-default options builds an encoder per call."""


def _c_encoder() -> Callable[[Any, int], Sequence[str]] | None:
    """The C encoder ``_COMPACT.encode`` makes on every call, made once (None without the
    ``_json`` accelerator): ``JSONEncoder.encode`` builds it, a float formatter and a
    cycle-check dict per call, a third of encoding a call's messages. Without the cycle
    check (stateless, so one serves every thread) a value that contains itself raises
    ``RecursionError`` instead of ``ValueError``; ``dumps`` falls back alike for both.
    Same arguments as ``_COMPACT``'s: same text."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    encoder: Callable[[Any, int], Sequence[str]] = make(
        None, _COMPACT.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
    return encoder


_ENCODE: Final = _c_encoder()


def dumps(value: Any) -> str:
    """Compact JSON of ``value`` (SDK objects converted, repr fallback); never raises."""
    if isinstance(value, str):
        # Strings are JSON-encoded too so that consumers always parse one format.
        return json.dumps(value, ensure_ascii=False)
    try:
        if _ENCODE is not None:
            return "".join(_ENCODE(value, 0))
        return _COMPACT.encode(value)
    except (TypeError, ValueError, RecursionError):
        try:
            return json.dumps(
                to_jsonable(value), ensure_ascii=False, separators=(",", ":"), default=_safe_repr
            )
        except (TypeError, ValueError, RecursionError):
            return json.dumps(_safe_repr(value), ensure_ascii=False)


def truncate_utf8(text: str, max_bytes: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes (marker included) without
    splitting a character. Returns ``(text, truncated?)``."""
    if len(text) * 4 <= max_bytes:
        return text, False
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text, False
    mark = TRUNCATION_MARK.encode("utf-8")
    keep = max(0, max_bytes - len(mark))
    return raw[:keep].decode("utf-8", errors="ignore") + TRUNCATION_MARK, True


@dataclasses.dataclass(slots=True)
class ContentStats:
    """Per-span tally of what the encoder did, stamped as ``tracejudge.content.*``."""

    redacted: int = 0
    truncated: bool = False


class ContentEncoder:
    """Serializes, redacts and caps one content value into one string attribute."""

    __slots__ = ("max_bytes", "redactor")

    def __init__(self, redactor: Redactor, max_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES) -> None:
        if max_bytes < 64:
            raise ValueError(f"max_attribute_bytes must be at least 64, got {max_bytes}")
        self.redactor = redactor
        self.max_bytes = max_bytes

    def encode(self, value: Any, stats: ContentStats, *, as_json: bool = True) -> str:
        """Return the attribute string for ``value``; updates ``stats``. Never raises."""
        try:
            text = dumps(value) if as_json or not isinstance(value, str) else value
            text, n = self.redactor.redact(text)
            stats.redacted += n
            text, cut = truncate_utf8(text, self.max_bytes)
            if cut:
                stats.truncated = True
            return text
        except Exception:  # content capture must never break the call
            return "<unserializable>"
