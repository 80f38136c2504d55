"""The template every model-provider patcher follows: a ``ProviderSpec`` over one wrapper.

Why: a provider patch has two halves that change for different reasons. What is the
SDK's (which methods, what a request and a response look like, how a stream's events
fold into a response) is data and translation functions, declared in a ``ProviderSpec``
per provider. What is ours (the duplicate-span check, making the span current while the
SDK runs, never raising into the application, raw responses, handing a stream to the
one ``StreamObserver``, exact unpatching) is written once here, for sync and async
methods alike. A new provider is a spec; it needs no wrapper code of its own. An SDK
whose entry points are module-level functions (LiteLLM's ``completion``/``acompletion``)
declares them as ``FunctionTarget``s and gets the same wrappers (``wrap_function``).

Per call the wrapper does: the duplicate-span check, ``endpoint.start`` (span started
with the request's attributes), the SDK call with the span current (and the spec's
``scope`` entered: the Anthropic SDK's own span is switched off there), then
``settle``: a response is recorded and the span ended, a stream is observed until it
ends, a raw response is parsed when that is free (the SDK caches ``parse()``, so the
application gets the same object), an unread ``with_streaming_response`` body is left
to the application (the span keeps the request side), a coroutine from a sync call
(LiteLLM's ``completion(..., acompletion=True)``) is followed to its result
(``instrumentation._deferred``). Translation runs inside the
runtime's guard, so a telemetry bug never turns a successful SDK call into an exception
(unless ``raise_internal_errors``); the SDK's own exceptions pass through unchanged.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import CoroutineType
from typing import Any, Protocol

from tracejudge.instrumentation._context import should_skip_model_span
from tracejudge.instrumentation._deferred import follow
from tracejudge.instrumentation._functions import as_function
from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._integration import SupportedVersions, installed_version
from tracejudge.instrumentation._patcher import (
    MethodPatches,
    sdk_importable,
    warn_once,
    wrapped_by_other_instrumentor,
)
from tracejudge.instrumentation._runtime import Runtime, current_runtime
from tracejudge.instrumentation._shapes import RAW_STREAMING, raw_mode
from tracejudge.instrumentation._stream import Accumulator, ErrorType, StreamObserver, observe

Start = Callable[[Runtime, Any, Mapping[str, Any]], ModelCallTelemetry]
"""``(runtime, SDK resource, call kwargs) -> started call``: the request translation."""
Finish = Callable[[ModelCallTelemetry, Any], None]
"""``(call, response)``: the response translation (the wrapper ends the call)."""


class Endpoint:
    """One API method family: how its request starts a span, how its response is
    recorded, how its stream is accumulated (``accumulator`` None: it never streams).

    Attributes are read on every call (not bound at patch time), so tests can swap a
    translation function on a live patch.
    """

    __slots__ = ("accumulator", "finish", "start")

    def __init__(
        self, start: Start, finish: Finish, accumulator: Callable[[], Accumulator] | None = None
    ) -> None:
        self.start = start
        self.finish = finish
        self.accumulator = accumulator


@dataclass(frozen=True, slots=True)
class Target:
    """The methods of one resource (a sync and an async class) that one endpoint serves.

    ``required`` methods must exist (else the SDK moved: the patch fails with one
    warning); ``optional`` ones are wrapped where the installed SDK has them.
    """

    module: str
    sync_class: str
    async_class: str
    endpoint: Endpoint
    required: tuple[str, ...] = ("create",)
    optional: tuple[str, ...] = ()
    must_import: bool = True
    """False: a resource some SDK releases lack (a beta API); its absence is no error."""
    async_suffix: str = ""
    """The async methods' names are the sync ones' with this suffix (mistralai's
    ``complete_async`` beside ``complete``, on the same class)."""


@dataclass(frozen=True, slots=True)
class FunctionTarget:
    """A module's sync and async functions that one endpoint serves (LiteLLM's
    ``litellm.completion`` and ``litellm.acompletion``); both must exist (else the SDK
    moved: the patch fails with one warning). The request translation reads keywords:
    positional arguments reach it as the keywords they bind to (``wrap_function``)."""

    module: str
    sync_function: str
    async_function: str
    endpoint: Endpoint


class CallScope(Protocol):
    """Entered around the SDK call while the span is current (``ProviderSpec.scope``)."""

    def enter(self) -> object:
        """Called before the SDK call; the return value is handed to ``exit``."""
        ...

    def exit(self, token: object) -> None:
        """Called after the SDK call returned or raised (same thread/task)."""
        ...


class Extension(Protocol):
    """Provider-specific patches beyond the spec's targets (``ProviderSpec.extension``).

    ``install`` may raise ``AttributeError``/``ImportError``/``TypeError`` when the
    SDK moved; ``uninstall`` must undo a partial install.
    """

    def install(self, runtime: Runtime, patches: MethodPatches, spec: ProviderSpec) -> None:
        """Add patches (record methods in ``patches`` so unpatching is exact)."""
        ...

    def uninstall(self) -> None:
        """Undo what ``install`` did beyond ``patches``."""
        ...


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """Everything provider-specific about a model-SDK patch (see the module docstring).

    - ``name``: user-facing (warnings, ``active_patchers()``); ``sdk_module``: the SDK's
      top-level module (``instrument()`` defers the patch until it is imported).
    - ``targets``: the methods and their endpoints; ``functions``: module-level
      functions and theirs.
    - ``stream_classes``: dotted paths of the SDK's sync and async stream classes; a call
      returning one of them is observed until the stream ends.
    - ``stream_error_type``: ``error.type`` for an error raised while reading a stream
      (None: the generic rule).
    - ``foreign_check``: ``(module, class, method)`` whose wrapping by another
      instrumentor means that instrumentor traces every endpoint: then this provider is
      not patched at all (no duplicate parent spans).
    - ``scope``: entered around each SDK call; ``extension``: makes the extra patches
      of one patcher instance.
    - ``distribution``/``supported``: the version check (see the fields).
    """

    name: str
    sdk_module: str
    targets: tuple[Target, ...]
    stream_classes: tuple[str, str]
    stream_error_type: ErrorType | None = None
    foreign_check: tuple[tuple[str, str, str], ...] = ()
    scope: CallScope | None = None
    extension: Callable[[], Extension] | None = None
    functions: tuple[FunctionTarget, ...] = ()
    distribution: str | None = None
    """The SDK's distribution name, for the version check (None: no check)."""
    supported: SupportedVersions | None = None
    """The releases tested: outside them, one warning names the range and the SDK is
    left unpatched (a provider patch reads SDK internals a new major may have moved)."""


def _resolve(path: str) -> type:
    module, _, attr = path.rpartition(".")
    found: type = getattr(importlib.import_module(module), attr)
    return found


class ProviderPatcher:
    """The ``Patcher`` of any ``ProviderSpec``: wraps its targets, exactly undone."""

    def __init__(self, spec: ProviderSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self._patches = MethodPatches()
        self._extension = spec.extension() if spec.extension is not None else None

    def available(self) -> bool:
        """True when the SDK is importable (nothing is imported)."""
        return sdk_importable(self.spec.sdk_module)

    def patch(self, runtime: Runtime) -> None:
        """Wrap every target method; raises AttributeError/ImportError if the SDK moved."""
        spec = self.spec
        if not self._version_supported() or self._foreign_instrumentor_traces_everything():
            return
        for target in spec.targets:
            try:
                module = importlib.import_module(target.module)
            except ImportError:
                if target.must_import:
                    raise
                continue
            for cls_name, is_async in ((target.sync_class, False), (target.async_class, True)):
                owner = getattr(module, cls_name)
                suffix = target.async_suffix if is_async else ""
                for name in (*target.required, *target.optional):
                    method = name + suffix
                    current = owner.__dict__.get(method)
                    if current is None:
                        if name not in target.required:
                            continue
                        current = getattr(owner, method)  # AttributeError: the SDK moved
                    if self._wrapped_by_other(current, f"{cls_name}.{method}"):
                        continue
                    self._patches.patch_method(
                        owner,
                        method,
                        functools.partial(
                            wrap_method,
                            runtime=runtime,
                            spec=spec,
                            endpoint=target.endpoint,
                            is_async=is_async,
                        ),
                    )
        for function in spec.functions:
            module = importlib.import_module(function.module)
            sync = getattr(module, function.sync_function)  # AttributeError: the SDK moved
            names = ((function.sync_function, False), (function.async_function, True))
            for name, is_async in names:
                current = getattr(module, name)
                if self._wrapped_by_other(current, f"{function.module}.{name}"):
                    continue
                self._patches.patch_method(
                    module,  # type: ignore[arg-type]  # a module's attributes patch like a class's
                    name,
                    functools.partial(
                        wrap_function,
                        runtime=runtime,
                        spec=spec,
                        endpoint=function.endpoint,
                        is_async=is_async,
                        like=sync if is_async else None,
                    ),
                )
        if self._extension is not None:
            self._extension.install(runtime, self._patches, spec)

    def _wrapped_by_other(self, current: Any, where: str) -> bool:
        """True (after one warning) when another instrumentor wraps ``current`` already:
        it is left to that one, to avoid duplicate spans."""
        foreign = wrapped_by_other_instrumentor(current, self.spec.sdk_module)
        if foreign is None:
            return False
        warn_once(
            f"{self.spec.name}:{where}",
            f"{where} is already wrapped by {foreign}; tracejudge leaves it to that "
            "instrumentor to avoid duplicate spans",
        )
        return True

    def _version_supported(self) -> bool:
        """False (after one warning) when the installed SDK is outside ``supported``."""
        spec = self.spec
        if spec.distribution is None or spec.supported is None:
            return True
        version = installed_version(spec.distribution)
        if version is not None and spec.supported.contains(version):
            return True
        warn_once(
            f"{spec.name}:version",
            f"{spec.distribution} {version or '(version unknown)'} is outside the range "
            f"tracejudge supports ({spec.supported}); {spec.name} calls are not traced",
        )
        return False

    def _foreign_instrumentor_traces_everything(self) -> bool:
        for module, cls_name, method in self.spec.foreign_check:
            func = getattr(importlib.import_module(module), cls_name).__dict__.get(method)
            foreign = wrapped_by_other_instrumentor(func, self.spec.sdk_module)
            if foreign is not None:
                # Instrumentors that patch the request choke point (OpenInference) trace
                # every endpoint; a span of ours would be a duplicate parent of theirs.
                warn_once(
                    f"{self.spec.name}:{method}",
                    f"{self.spec.sdk_module} {cls_name}.{method} is already wrapped by "
                    f"{foreign}; tracejudge does not patch {self.spec.name}, to avoid "
                    "duplicate spans",
                )
                return True
        return False

    def unpatch(self) -> None:
        """Restore every original (safe after a partial patch or none)."""
        self._patches.restore()
        if self._extension is not None:
            self._extension.uninstall()


@dataclass(frozen=True, slots=True)
class _Streams:
    sync: type
    async_: type


# --- one call -------------------------------------------------------------------------


def live_runtime(runtime: Runtime) -> Runtime | None:
    """The runtime a wrapper's call uses: the one ``instrument()`` set now, so a wrapper an
    SDK object bound earlier (openai's cached ``with_raw_response``, which ChatOpenAI calls
    through) follows ``uninstrument()`` and a later ``instrument()`` with new settings; None
    after ``uninstrument()`` (the call passes through untraced). A wrapper made outside
    ``instrument()`` (benchmarks, tests) keeps the runtime it was made with."""
    current = current_runtime()
    if current is not None:
        return current
    return None if runtime.retired else runtime


def begin(
    runtime: Runtime, endpoint: Endpoint, resource: Any, kwargs: Mapping[str, Any]
) -> ModelCallTelemetry | None:
    """Start the call's telemetry and make its span current, or return None (no span
    belongs here, or starting failed: logged) without raising."""
    if should_skip_model_span():
        return None
    try:
        call = endpoint.start(runtime, resource, kwargs)
        call.activate()
        return call
    except Exception as exc:
        runtime.internal_error(exc)
        if runtime.raise_internal_errors:
            raise
        return None


def failed(runtime: Runtime, call: ModelCallTelemetry, exc: BaseException) -> None:
    """The SDK call raised: an ``Exception`` fails the span; a ``BaseException`` that is
    not one (cancellation, interrupt) is the caller stopping it, not a model error."""
    with runtime.guard:
        if isinstance(exc, Exception):
            call.fail(exc)
        else:
            call.abandon()


def watch(
    runtime: Runtime,
    spec: ProviderSpec,
    endpoint: Endpoint,
    call: ModelCallTelemetry,
    stream: Any,
    *,
    is_async: bool,
) -> StreamObserver | None:
    """Hand a stream to a new observer; end the call now (None) if it cannot be observed."""
    make = endpoint.accumulator
    if make is not None:
        observer = StreamObserver(runtime, call, make(), spec.stream_error_type)
        if observe(stream, observer, is_async=is_async):
            return observer
    call.end()
    return None


def _settle(
    runtime: Runtime,
    spec: ProviderSpec,
    endpoint: Endpoint,
    call: ModelCallTelemetry,
    result: Any,
    streams: _Streams,
    *,
    is_async: bool,
) -> None:
    """Watch a stream, or record a response and end the call."""
    if isinstance(result, streams.async_ if is_async else streams.sync):
        watch(runtime, spec, endpoint, call, result, is_async=is_async)
        return
    endpoint.finish(call, result)
    call.end()


def _raw(result: Any, kwargs: Mapping[str, Any]) -> str | None:
    """The raw mode when ``result`` is a raw-response wrapper (not yet parsed), else None."""
    mode = raw_mode(kwargs)
    if mode is None:
        return None
    if getattr(result, "http_response", None) is None or not callable(
        getattr(result, "parse", None)
    ):
        return None
    return mode


def _parse_is_free(mode: str, kwargs: Mapping[str, Any]) -> bool:
    """Whether a raw response's ``parse()`` reads nothing the application would miss: its
    body was read already (``with_raw_response``), or it is a stream, which ``parse()``
    wraps without reading (the application then iterates the observed stream)."""
    return mode != RAW_STREAMING or kwargs.get("stream") is True


def returned(
    runtime: Runtime,
    spec: ProviderSpec,
    endpoint: Endpoint,
    call: ModelCallTelemetry,
    result: Any,
    kwargs: Mapping[str, Any],
    streams: _Streams,
) -> None:
    """Record what a sync SDK call returned; the span ends unless a stream took it."""
    try:
        if not kwargs.get("extra_headers"):  # the common case, inlined (per-call cost)
            if isinstance(result, streams.sync):
                watch(runtime, spec, endpoint, call, result, is_async=False)
            else:
                endpoint.finish(call, result)
                call.end()
            return
        mode = _raw(result, kwargs)
        if mode is None:
            _settle(runtime, spec, endpoint, call, result, streams, is_async=False)
        elif _parse_is_free(mode, kwargs):
            parsed = result.parse()  # cached by the SDK: the application gets the same
            if inspect.isawaitable(parsed):  # defensive: never leave a coroutine
                getattr(parsed, "close", lambda: None)()
                call.end()
            else:
                _settle(runtime, spec, endpoint, call, parsed, streams, is_async=False)
        else:
            call.end()  # the body is the application's to read: request side only
    except Exception as exc:
        runtime.internal_error(exc)
        if not call.ended:
            call.end()
        if runtime.raise_internal_errors:
            raise


async def returned_async(
    runtime: Runtime,
    spec: ProviderSpec,
    endpoint: Endpoint,
    call: ModelCallTelemetry,
    result: Any,
    kwargs: Mapping[str, Any],
    streams: _Streams,
) -> None:
    """``returned`` for async clients, whose raw responses may parse asynchronously."""
    try:
        if not kwargs.get("extra_headers"):
            if isinstance(result, streams.async_):
                watch(runtime, spec, endpoint, call, result, is_async=True)
            else:
                endpoint.finish(call, result)
                call.end()
            return
        mode = _raw(result, kwargs)
        if mode is None:
            _settle(runtime, spec, endpoint, call, result, streams, is_async=True)
        elif _parse_is_free(mode, kwargs):
            parsed = result.parse()
            if inspect.isawaitable(parsed):
                parsed = await parsed
            _settle(runtime, spec, endpoint, call, parsed, streams, is_async=True)
        else:
            call.end()
    except Exception as exc:
        runtime.internal_error(exc)
        if not call.ended:
            call.end()
        if runtime.raise_internal_errors:
            raise


# --- the wrappers ---------------------------------------------------------------------


def wrap_method(
    original: Callable[..., Any],
    *,
    runtime: Runtime,
    spec: ProviderSpec,
    endpoint: Endpoint,
    is_async: bool = False,
) -> Callable[..., Any]:
    """The wrapper ``ProviderPatcher`` installs on one SDK method (also for benchmarks).

    Raises ImportError/AttributeError when the spec's stream classes moved."""
    streams = _Streams(_resolve(spec.stream_classes[0]), _resolve(spec.stream_classes[1]))
    make = async_wrapper if is_async else sync_wrapper
    return make(original, runtime=runtime, spec=spec, endpoint=endpoint, streams=streams)


def wrap_function(
    original: Callable[..., Any],
    *,
    runtime: Runtime,
    spec: ProviderSpec,
    endpoint: Endpoint,
    is_async: bool = False,
    like: Callable[..., Any] | None = None,
) -> Callable[..., Any]:
    """The wrapper ``ProviderPatcher`` installs on a module-level function: the method
    wrapper over it, with no resource (the endpoint's ``start`` gets None; see
    ``instrumentation._functions`` for how its arguments are passed on, and ``like``)."""
    return as_function(
        original,
        lambda method: wrap_method(
            method, runtime=runtime, spec=spec, endpoint=endpoint, is_async=is_async
        ),
        is_async=is_async,
        like=like,
    )


def sync_wrapper(
    original: Callable[..., Any],
    *,
    runtime: Runtime,
    spec: ProviderSpec,
    endpoint: Endpoint,
    streams: _Streams,
) -> Callable[..., Any]:
    """The wrapper of a sync SDK method (see the module docstring)."""
    scope = spec.scope

    @functools.wraps(original)
    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        rt = live_runtime(runtime)
        call = begin(rt, endpoint, self, kwargs) if rt is not None else None
        if call is None or rt is None:
            return original(self, *args, **kwargs)
        token = scope.enter() if scope is not None else None
        try:
            result = original(self, *args, **kwargs)
        except BaseException as exc:
            if scope is not None:
                scope.exit(token)
            call.deactivate()
            failed(rt, call, exc)
            raise
        if scope is not None:
            scope.exit(token)
        call.deactivate()
        if type(result) is CoroutineType:  # made when awaited: follow it (``_deferred``)
            return follow(
                rt,
                call,
                result,
                lambda value: returned_async(rt, spec, endpoint, call, value, kwargs, streams),
                lambda exc: failed(rt, call, exc),
            )
        returned(rt, spec, endpoint, call, result, kwargs, streams)
        return result

    return create


def async_wrapper(
    original: Callable[..., Any],
    *,
    runtime: Runtime,
    spec: ProviderSpec,
    endpoint: Endpoint,
    streams: _Streams,
) -> Callable[..., Any]:
    """The wrapper of an async SDK method."""
    scope = spec.scope

    @functools.wraps(original)
    async def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        rt = live_runtime(runtime)
        call = begin(rt, endpoint, self, kwargs) if rt is not None else None
        if call is None or rt is None:
            return await original(self, *args, **kwargs)
        token = scope.enter() if scope is not None else None
        try:
            result = await original(self, *args, **kwargs)
        except BaseException as exc:
            if scope is not None:
                scope.exit(token)
            call.deactivate()
            failed(rt, call, exc)
            raise
        if scope is not None:
            scope.exit(token)
        call.deactivate()
        await returned_async(rt, spec, endpoint, call, result, kwargs, streams)
        return result

    return create
