"""``instrument()`` / ``uninstrument()``: provider set-up and applying every patcher.

Why it is careful about providers: libraries that take over the global TracerProvider
leak or lose spans (a known complaint against several GenAI instrumentations). So:
an explicit ``tracer_provider=`` wins; otherwise an application-configured global
provider is used as is; only when the application has none do we build an SDK provider
with an OTLP exporter configured from the standard ``OTEL_*`` variables, and we never
replace a provider afterwards.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
from collections.abc import Iterable
from types import ModuleType
from typing import Literal, TypeAlias

from opentelemetry import trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from tracejudge.instrumentation._content import DEFAULT_MAX_ATTRIBUTE_BYTES, CaptureMode
from tracejudge.instrumentation._import_hook import ImportHooks
from tracejudge.instrumentation._patcher import (
    Patcher,
    Registration,
    iter_patcher_factories,
    note_once,
    sdk_importable,
    warn_once,
)
from tracejudge.instrumentation._runtime import Runtime, current_runtime, set_runtime

logger = logging.getLogger("tracejudge.instrumentation")

_lock = threading.RLock()
_active: list[Patcher] = []
_configured_provider: TracerProvider | None = None
_hooks = ImportHooks()
_generation = 0
"""Bumped by every ``instrument()``/``uninstrument()``: a deferred patch registered under
an older generation is stale and must not be applied."""
_HOOK_LOCK_TIMEOUT_S = 10.0
_Applied: TypeAlias = Literal["patched", "not installed", "failed"]


def instrument(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: str | bool | CaptureMode | None = None,
    redact_patterns: Iterable[str] = (),
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
    raise_internal_errors: bool = False,
) -> None:
    """Patch every supported client SDK that is installed; safe to call again.

    SDKs already imported are patched now; SDKs installed but not imported yet are
    patched when the application imports them (so ``instrument()`` never pays for
    importing an SDK the application does not use).

    - ``tracer_provider`` / ``meter_provider``: where spans and metrics go (default: the
      global providers; a TracerProvider exporting over OTLP is set up from ``OTEL_*``
      variables only when the application configured none).
    - ``capture_content``: message-content mode (``NO_CONTENT``, ``SPAN_ONLY``,
      ``EVENT_ONLY``, ``SPAN_AND_EVENT``, or a bool); default from
      ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``. Tool arguments/results and
      the agent's final answer are always captured (redacted, capped).
    - ``redact_patterns``: extra regular expressions whose matches are redacted.
    - ``max_attribute_bytes``: cap of one content attribute (UTF-8 bytes).
    - ``raise_internal_errors``: re-raise tracejudge's own errors (tests only).

    A second call re-applies the new settings: patchers are removed and applied again.
    Bad arguments raise ``ValueError``/``TypeError`` before anything is patched.
    """
    global _generation
    with _lock:
        provider = tracer_provider or _application_or_default_provider()
        runtime = Runtime(
            tracer_provider=provider,
            meter_provider=meter_provider,
            capture_content=capture_content,
            redact_patterns=redact_patterns,
            max_attribute_bytes=max_attribute_bytes,
            raise_internal_errors=raise_internal_errors,
        )
        _unpatch_all()
        _hooks.cancel_all()
        _generation += 1
        set_runtime(runtime)
        missing: list[str] = []
        registrations = iter_patcher_factories()
        model_sdks = [r for r in registrations if not r.optional]
        for reg in registrations:
            if reg.sdk_module is None or reg.sdk_module in sys.modules:
                if _apply(reg, runtime) == "not installed" and not reg.optional:
                    missing.append(reg.name)
            elif sdk_importable(reg.sdk_module):
                apply_later = functools.partial(_apply_on_import, reg, runtime, _generation)
                _hooks.when_imported(reg.sdk_module, apply_later)
            else:
                if not reg.optional:
                    missing.append(reg.name)
                _not_installed(reg)
        if model_sdks and len(missing) == len(model_sdks):
            # no model call at all will be traced: that one is worth a warning
            warn_once(
                "<no sdk>",
                f"no supported model SDK is installed ({', '.join(missing)}); only "
                "@tracejudge.tool and tracejudge.agent() spans will be recorded",
            )


def _apply_on_import(
    reg: Registration, runtime: Runtime, generation: int, module: ModuleType
) -> None:
    """The post-import hook's callback: patch the SDK just imported, if still wanted.

    Runs inside the application's import; never raises (``_apply`` logs failures). The
    lock wait is bounded so a concurrent ``instrument()`` in another thread can never
    hold the import up forever.
    """
    if not _lock.acquire(timeout=_HOOK_LOCK_TIMEOUT_S):
        logger.warning("tracejudge: %s imported while instrument() was busy; not traced", reg.name)
        return
    try:
        if generation == _generation:
            _apply(reg, runtime)
    finally:
        _lock.release()


def _not_installed(reg: Registration) -> None:
    name = reg.name
    note_once(name, f"{name} SDK not installed; {name} calls will not be traced")


def _apply(reg: Registration, runtime: Runtime) -> _Applied:
    """Apply one patcher; say whether it patched, found no SDK, or failed (warned)."""
    name = reg.name
    try:
        patcher = reg.factory()
    except Exception as exc:  # a broken patcher must not stop the others
        warn_once(name, f"{name} instrumentation unavailable ({exc!r}); skipping it")
        return "failed"
    try:
        if not patcher.available():
            _not_installed(reg)
            return "not installed"
        patcher.patch(runtime)
    except Exception as exc:  # SDK internals moved: skip, keep the rest
        try:
            patcher.unpatch()
        except Exception:
            logger.debug("tracejudge: unpatch after failed patch raised", exc_info=True)
        warn_once(
            name,
            f"{name} SDK is installed but could not be patched ({exc!r}); "
            f"{name} calls will not be traced",
        )
        return "failed"
    _active.append(patcher)
    return "patched"


def uninstrument() -> None:
    """Restore every patched SDK method and drop pending import hooks (an SDK imported
    afterwards stays unpatched); spans already emitted are unaffected.

    The tracer provider tracejudge may have configured stays in place (replacing a
    global provider is not possible in OpenTelemetry) but is flushed.
    """
    global _generation
    with _lock:
        _unpatch_all()
        _hooks.cancel_all()
        _generation += 1
        retiring = current_runtime()
        if retiring is not None:
            retiring.retired = True
        set_runtime(None)
        provider = _configured_provider
        flush = getattr(provider, "force_flush", None)
        if callable(flush):
            try:
                flush()
            except Exception:
                logger.debug("tracejudge: flush on uninstrument failed", exc_info=True)


def active_patchers() -> tuple[str, ...]:
    """Names of the patchers currently applied (diagnostics, tests)."""
    with _lock:
        return tuple(p.name for p in _active)


def pending_sdks() -> tuple[str, ...]:
    """SDK modules installed but not imported yet: patched when the application imports
    them (diagnostics, tests)."""
    return _hooks.pending()


def _unpatch_all() -> None:
    while _active:
        patcher = _active.pop()
        try:
            patcher.unpatch()
        except Exception:
            logger.warning("tracejudge: could not unpatch %s", patcher.name, exc_info=True)


def _application_or_default_provider() -> TracerProvider:
    """The global provider if the application set one, else one we configure from env."""
    global _configured_provider
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):
        return current
    if _configured_provider is not None:
        return _configured_provider
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return current
    if os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return current
    provider = _build_otlp_provider()
    trace.set_tracer_provider(provider)
    _configured_provider = trace.get_tracer_provider()
    return _configured_provider


def _build_otlp_provider() -> TracerProvider:
    """SDK provider + batch OTLP exporter; protocol from ``OTEL_EXPORTER_OTLP_*PROTOCOL``.

    The exporter is wrapped so that a collector that is not running costs the application
    one warning, not seconds of retries (``_guard``)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    exporter: SpanExporter
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        exporter = GrpcExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpExporter,
        )

        exporter = HttpExporter()
    from tracejudge.instrumentation._endpoint import traces_endpoint
    from tracejudge.instrumentation._guard import UnreachableGuard

    provider = SdkTracerProvider(resource=Resource.create())
    provider.add_span_processor(BatchSpanProcessor(UnreachableGuard(exporter, traces_endpoint())))
    return provider
