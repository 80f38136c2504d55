"""``instrument()`` / ``uninstrument()``: provider set-up and applying every patcher.

Why it is careful about providers: libraries that take over the global TracerProvider
leak or lose spans (a known complaint against several GenAI instrumentations). So:
an explicit ``tracer_provider=`` wins; otherwise an application-configured global
provider is used as is; only when the application has none do we build an SDK provider
with the exporters ``OTEL_TRACES_EXPORTER`` names (default ``otlp``, configured from the
standard ``OTEL_*`` variables; ``otlp_file`` for the OTLP file exporter), and we never
replace a provider afterwards. ``instrument(file=PATH)`` adds the file exporter to
whichever provider is used (and, when it builds one, only that exporter unless
``OTEL_TRACES_EXPORTER`` asks for more).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Literal, TypeAlias

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

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import SpanProcessor
    from opentelemetry.sdk.trace.export import SpanExporter

    from tracejudge.instrumentation._route import RouteKeyProcessor

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
    file: str | os.PathLike[str] | None = None,
    route_key: bool = True,
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
    - ``file``: also append the spans to this file as OTLP/JSON lines, which ``tracejudge
      eval`` reads (the OTLP file exporter, ``tracejudge.instrumentation.file_exporter``);
      a path that cannot be written raises ``ValueError``.
    - ``route_key``: put ``tracejudge.route.key`` on every span started in a run that
      names a conversation or a request (``RouteKeyProcessor``), so a load balancer in
      front of several collectors keeps a conversation, and a shadow with its stable run,
      on one collector (docs/deployment.md). On by default: a run without either gets no
      attribute, and forgetting it would split conversations silently at scale-out. It
      needs an SDK tracer provider (one that takes span processors); with another it is
      skipped with a note.

    A second call re-applies the new settings: patchers are removed and applied again.
    Bad arguments raise ``ValueError``/``TypeError`` before anything is patched.
    """
    global _generation
    with _lock:
        provider = tracer_provider or _application_or_default_provider(file is not None)
        if not isinstance(route_key, bool):
            raise TypeError(f"route_key must be a bool, got {type(route_key).__name__}")
        if file is not None and not _sdk_disabled():
            _add_file_exporter(provider, Path(file))
        _set_route_keys(provider, route_key)
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
        for processor in list(_route_processors.values()):
            processor.enabled = False
        retiring = current_runtime()
        if retiring is not None:
            retiring.retired = True
        set_runtime(None)
        provider = _configured_provider
        flushes = [getattr(provider, "force_flush", None)]
        for files in list(_file_processors.values()):
            flushes += [p.force_flush for p in files.values()]
        for flush in flushes:
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


def _application_or_default_provider(file_given: bool = False) -> TracerProvider:
    """The global provider if the application set one, else one we configure from env
    (with no exporter of its own when only ``file=`` asks for spans)."""
    global _configured_provider
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):
        return current
    if _configured_provider is not None:
        return _configured_provider
    if _sdk_disabled():
        return current
    default = "none" if file_given else "otlp"
    names = [
        n.strip().lower()
        for n in os.environ.get("OTEL_TRACES_EXPORTER", default).split(",")
        if n.strip()
    ]
    exporters = [e for e in (_exporter(n) for n in names if n != "none") if e is not None]
    if not exporters and not file_given:
        return current
    provider = _build_provider(exporters)
    trace.set_tracer_provider(provider)
    _configured_provider = trace.get_tracer_provider()
    return _configured_provider


def _sdk_disabled() -> bool:
    """``OTEL_SDK_DISABLED=true``: no provider of ours, no file written."""
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def _build_provider(exporters: list[SpanExporter]) -> TracerProvider:
    """An SDK provider (resource from ``OTEL_SERVICE_NAME``/``OTEL_RESOURCE_ATTRIBUTES``)
    with a batching processor per exporter."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = SdkTracerProvider(resource=Resource.create())
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _exporter(name: str) -> SpanExporter | None:
    """The exporter ``OTEL_TRACES_EXPORTER`` names (None, warned once, for one we lack or
    a file that cannot be written)."""
    if name == "otlp":
        return _otlp_exporter()
    if name in FILE_EXPORTER_NAMES:
        from tracejudge.instrumentation.file_exporter import OtlpFileSpanExporter, output_path

        path = output_path(os.environ.get(FILE_VARIABLE, ""))
        try:
            return OtlpFileSpanExporter(path)
        except OSError as exc:
            warn_once(f"<{name}>", f"{FILE_VARIABLE}: cannot write {path}: {exc}; not kept")
            return None
    warn_once(
        f"<exporter {name}>",
        f"OTEL_TRACES_EXPORTER={name} is not an exporter tracejudge sets up (otlp, "
        f"{', '.join(FILE_EXPORTER_NAMES)}, none); configure the tracer provider yourself",
    )
    return None


FILE_EXPORTER_NAMES = ("otlp_file", "otlp_file/development")
"""``OTEL_TRACES_EXPORTER`` values for the OTLP file exporter (the name OpenTelemetry's
declarative configuration gives it)."""
FILE_VARIABLE = "TRACEJUDGE_TRACES_FILE"
"""Where the OTLP file exporter writes (a path or ``file://`` URI; unset: stdout)."""
_file_processors: weakref.WeakKeyDictionary[TracerProvider, dict[Path, SpanProcessor]] = (
    weakref.WeakKeyDictionary()
)
"""The file exporters' processors ``instrument(file=...)`` added, by provider and file: a
second call for the same file adds none; ``uninstrument()`` flushes them. Keyed by the
provider itself, weakly: a provider's ``id()`` is reused once it is collected, and a new
provider at that address must not pass for the old one."""


def _add_file_exporter(provider: TracerProvider, path: Path) -> None:
    """Append ``provider``'s spans to ``path`` (ValueError: not an SDK provider, or a file
    that cannot be written)."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from tracejudge.instrumentation.file_exporter import OtlpFileSpanExporter

    add = getattr(provider, "add_span_processor", None)
    if not callable(add):
        raise ValueError(
            f"file: the tracer provider ({type(provider).__name__}) takes no span "
            "processors; pass an SDK TracerProvider, or add OtlpFileSpanExporter to yours"
        )
    files = _file_processors.setdefault(provider, {})
    if path.resolve() in files:
        return
    try:
        exporter = OtlpFileSpanExporter(path)
    except OSError as exc:
        raise ValueError(f"file: cannot write {path}: {exc.strerror or exc}") from exc
    processor = BatchSpanProcessor(exporter)
    add(processor)
    files[path.resolve()] = processor


_route_processors: weakref.WeakKeyDictionary[TracerProvider, RouteKeyProcessor] = (
    weakref.WeakKeyDictionary()
)
"""The routing-key processor ``instrument()`` added to each provider: a second call turns
it on or off rather than adding another; ``uninstrument()`` turns it off. Keyed by the
provider itself, weakly (not by ``id()``: a collected provider's id is reused, and a new
provider there got no processor at all)."""


def _set_route_keys(provider: TracerProvider, enabled: bool) -> None:
    """Add (or switch) the ``RouteKeyProcessor`` of ``provider``."""
    from tracejudge.instrumentation._route import RouteKeyProcessor

    add = getattr(provider, "add_span_processor", None)
    processor = _route_processors.get(provider) if callable(add) else None
    if processor is not None:
        processor.enabled = enabled
        return
    if not enabled:
        return
    if not callable(add):
        note_once(
            "<route key>",
            f"the tracer provider ({type(provider).__name__}) takes no span processors: "
            "spans get no tracejudge.route.key (add RouteKeyProcessor to your SDK provider)",
        )
        return
    processor = RouteKeyProcessor()
    add(processor)
    _route_processors[provider] = processor


def _otlp_exporter() -> SpanExporter:
    """The OTLP exporter; protocol from ``OTEL_EXPORTER_OTLP_*PROTOCOL``.

    It is wrapped so that a collector that is not running costs the application one
    warning, not seconds of retries (``_guard``)."""
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

    return UnreachableGuard(exporter, traces_endpoint())
