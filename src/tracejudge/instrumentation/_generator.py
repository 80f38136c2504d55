"""Stream methods whose result is a generator: the wrapper every such provider shares.

Why: some SDKs stream from a generator function (google-genai's
``generate_content_stream``, cohere's ``chat_stream``). A generator's class cannot be
swapped for an observed subclass as the Stainless and Speakeasy SDKs' stream objects are
(``_stream.observe``), so the wrapped method hands back our own generator around the
SDK's, reporting to the one ``StreamObserver`` (the endpoint's accumulator folds the
chunks into a response): exhaustion, an error, ``break``/``close()`` (``GeneratorExit``)
and garbage collection of a stream never read (a finaliser) all end the span exactly
once. The span is current while each chunk is fetched, so the HTTP request the first read
sends nests under it.

Three shapes of method (``GeneratorKind``): a sync generator function (or a function
returning a generator), an ``async def`` returning an async iterator (google-genai), and
an async generator function (cohere's ``AsyncV2Client.chat_stream``: calling it returns
the async generator, nothing is awaited).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._patcher import MethodPatches
from tracejudge.instrumentation._provider import Endpoint, ProviderSpec, begin, live_runtime
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation._stream import StreamObserver

GeneratorKind = Literal["sync", "awaitable", "async_generator"]


def _observed(call: ModelCallTelemetry, observer: StreamObserver, inner: Any) -> Iterator[Any]:
    """The SDK's chunk generator, reported to ``observer``; the span current per read."""
    try:
        while True:
            call.activate()
            try:
                item = next(inner)
            except StopIteration:
                call.deactivate()
                observer.complete()
                return
            except BaseException as exc:
                call.deactivate()
                observer.fail(exc)  # cancellation and interrupts: abandoned, not failed
                raise
            call.deactivate()
            observer.on_item(item)
            yield item
    finally:
        observer.abandon()  # ``break``/``close()``: a no-op after an ending above
        close = getattr(inner, "close", None)
        if close is not None:
            close()


async def _observed_async(
    call: ModelCallTelemetry, observer: StreamObserver, inner: Any
) -> AsyncIterator[Any]:
    """``_observed`` for an async iterator."""
    try:
        while True:
            call.activate()
            try:
                item = await inner.__anext__()
            except StopAsyncIteration:
                call.deactivate()
                observer.complete()
                return
            except BaseException as exc:
                call.deactivate()
                observer.fail(exc)
                raise
            call.deactivate()
            observer.on_item(item)
            yield item
    finally:
        observer.abandon()
        aclose = getattr(inner, "aclose", None)
        if aclose is not None:
            await aclose()


def _hand_out(
    runtime: Runtime, spec: ProviderSpec, endpoint: Endpoint, call: ModelCallTelemetry, inner: Any
) -> Any:
    """Our generator around ``inner``, ending ``call`` however the stream ends."""
    make = endpoint.accumulator
    assert make is not None, "a generator endpoint has an accumulator"
    observer = StreamObserver(runtime, call, make(), spec.stream_error_type)
    if hasattr(inner, "__anext__"):
        wrapped: Any = _observed_async(call, observer, inner)
    else:
        wrapped = _observed(call, observer, iter(inner))
    weakref.finalize(wrapped, observer.abandon)  # a stream never read
    return wrapped


def _failed(runtime: Runtime, call: ModelCallTelemetry, exc: BaseException) -> None:
    call.deactivate()
    with runtime.guard:
        call.fail(exc)


def wrap_generator(
    runtime: Runtime, spec: ProviderSpec, endpoint: Endpoint, kind: GeneratorKind
) -> Callable[[Any], Any]:
    """``make_wrapper`` for ``MethodPatches.patch_method``: the stream method of one
    ``kind`` traced as ``endpoint`` (see the module docstring)."""

    def make(original: Any) -> Any:
        if kind == "awaitable":

            @functools.wraps(original)
            async def awaited(self: Any, *args: Any, **kwargs: Any) -> Any:
                rt = live_runtime(runtime)
                call = begin(rt, endpoint, self, kwargs) if rt is not None else None
                if call is None or rt is None:
                    return await original(self, *args, **kwargs)
                try:
                    inner = await original(self, *args, **kwargs)
                except BaseException as exc:
                    _failed(rt, call, exc)
                    raise
                call.deactivate()
                return _hand_out(rt, spec, endpoint, call, inner)

            return awaited

        @functools.wraps(original)
        def called(self: Any, *args: Any, **kwargs: Any) -> Any:
            rt = live_runtime(runtime)
            call = begin(rt, endpoint, self, kwargs) if rt is not None else None
            if call is None or rt is None:
                return original(self, *args, **kwargs)
            try:
                inner = original(self, *args, **kwargs)
            except BaseException as exc:
                _failed(rt, call, exc)
                raise
            call.deactivate()
            return _hand_out(rt, spec, endpoint, call, inner)

        return called

    return make


@dataclass(frozen=True, slots=True)
class GeneratorMethod:
    """One stream method to wrap: ``module.owner.method`` of ``kind``."""

    module: str
    owner: str
    method: str
    endpoint: Endpoint
    kind: GeneratorKind


class GeneratorMethods:
    """An ``Extension`` that wraps generator stream methods (see the module docstring)."""

    def __init__(self, *methods: GeneratorMethod) -> None:
        self.methods = methods

    def install(self, runtime: Runtime, patches: MethodPatches, spec: ProviderSpec) -> None:
        """Wrap each method (ImportError/AttributeError: the SDK moved)."""
        import importlib

        for m in self.methods:
            owner = getattr(importlib.import_module(m.module), m.owner)
            patches.patch_method(owner, m.method, wrap_generator(runtime, spec, m.endpoint, m.kind))

    def uninstall(self) -> None:
        """Nothing beyond the recorded method patches."""
