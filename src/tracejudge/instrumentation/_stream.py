"""The one stream observer: a streamed call's span ends exactly once, however it ends.

Why: the most common span leak in GenAI instrumentations is a stream the caller stops
reading (``break``, closing early, dropping it). Every provider's stream reports to a
``StreamObserver`` that owns the call's telemetry and the provider's accumulator (which
folds events into a response); every end path — exhaustion, an error, ``close()``/
``__exit__``, a closed HTTP response, an early ``break`` (generator close), garbage
collection — reaches it, and the first ending wins (``ModelCallTelemetry.claim``; the
garbage collector may run a finaliser on another thread).

How a stream is observed (``observe``): the SDK's stream object is given a subclass of
its own class (built once per SDK class, cached), so the application keeps the very
object the SDK returned — ``isinstance`` checks, attributes, the SDK's own helpers that
read the stream internally (``.stream()`` managers, ``get_final_message``) all keep
working, and a raw response's cached ``parse()`` hands out the observed stream. The
subclass also routes ``stream.response.close()`` to the observer: the SDKs' ``.stream()``
helpers close the HTTP response directly when their ``with`` block exits, and that must
end the span right then, not at garbage collection. Where an SDK's metaclass defeats
subclass ``isinstance`` (anthropic 0.3x-0.4x), the instance's ``_iterator``/``close``
are wrapped instead. If neither is possible the call ends at once with what the request
told us: no span leaks and the application's stream is untouched. A stream that is its own
iterator (the Speakeasy SDKs' ``EventStream``: mistralai's; ``__iter__`` returns the stream)
is observed in ``__next__``/``__anext__`` alone. An async stream's ``close`` is awaited when
its class has an async one, called when it has a sync one (LiteLLM's ``CustomStreamWrapper``
serves both kinds of call), and its ``aclose`` (``async with``) ends the span too.
"""

from __future__ import annotations

import contextlib
import inspect
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol

from tracejudge import semconv
from tracejudge.instrumentation._genai import ModelCallTelemetry, record_exception
from tracejudge.instrumentation._runtime import Runtime

_OBSERVER_ATTR = "_tracejudge_observer"
_RESPONSE_ATTR = "response"
_STATUS_DESCRIPTION_MAX = 512


class Accumulator(Protocol):
    """A provider's stream translation: folds events in, records them at the end."""

    def add(self, item: Any) -> None:
        """Fold one stream event in."""

    def finish(self, call: ModelCallTelemetry, *, complete: bool) -> None:
        """Record what arrived on ``call`` (``complete`` False: the stream ended early)."""


ErrorType = Callable[[BaseException], "str | None"]
"""A provider's ``error.type`` for an error raised while reading a stream, or None for
the generic rule (``ModelCallTelemetry.fail``)."""


class StreamObserver:
    """Accumulator + telemetry of one stream; shared by the stream and its finaliser.

    ``reading`` is True while the stream is inside the SDK's own iteration: a response
    ``close()`` then is the SDK's cleanup at the end of the body, which the ending that
    follows (exhaustion or error) handles; outside it, a close is the caller's.
    """

    __slots__ = ("acc", "call", "error_type", "first", "reading", "runtime")

    def __init__(
        self,
        runtime: Runtime,
        call: ModelCallTelemetry,
        acc: Accumulator,
        error_type: ErrorType | None = None,
    ) -> None:
        self.runtime = runtime
        self.call = call
        self.acc = acc
        self.error_type = error_type
        self.first = True
        self.reading = False

    def on_item(self, item: Any) -> None:
        """One event reached the application."""
        with self.runtime.guard:
            if self.first:
                self.first = False
                self.call.span.set_attribute(
                    semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
                    time.perf_counter() - self.call.start,
                )
            self.acc.add(item)

    # Each ending claims the call first, so when exhaustion, close and the GC finaliser
    # race (possibly on different threads) exactly one records the response and ends.

    def complete(self) -> None:
        """The stream was read to its end."""
        if not self.call.claim():
            return
        with self.runtime.guard:
            self.acc.finish(self.call, complete=True)
        with self.runtime.guard:
            self.call.end(claimed=True)

    def fail(self, exc: BaseException) -> None:
        """Reading raised: an error event or a transport failure (a ``BaseException``
        that is not an ``Exception`` — cancellation, interpreter exit — is no model
        error: the stream is abandoned instead)."""
        if not isinstance(exc, Exception):
            self.abandon()
            return
        if not self.call.claim():
            return
        kind: str | None = None
        with self.runtime.guard:
            self.acc.finish(self.call, complete=False)
            if self.error_type is not None:
                kind = self.error_type(exc)
        with self.runtime.guard:
            if kind is None:
                self.call.fail(exc, claimed=True)
            else:
                record_exception(self.call.span, exc)
                self.call.abandon(kind, str(exc)[:_STATUS_DESCRIPTION_MAX] or kind, claimed=True)

    def abandon(self) -> None:
        """The caller stopped reading: keep what arrived, end without an error status."""
        if not self.call.claim():
            return
        with self.runtime.guard:
            self.acc.finish(self.call, complete=False)
        with self.runtime.guard:
            self.call.abandon(claimed=True)

    def response_closed(self) -> None:
        """The HTTP response was closed: by the caller (end now) or by the SDK's own
        cleanup while reading (the ending that follows handles it)."""
        if not self.reading:
            self.abandon()


class _ResponseProxy:
    """The HTTP response as the stream hands it out: ``close()`` reaches the observer.

    Everything else is delegated to the real response.
    """

    __slots__ = ("_observer", "_response")

    def __init__(self, response: Any, observer: StreamObserver) -> None:
        self._response = response
        self._observer = observer

    def close(self) -> None:
        try:
            self._response.close()
        finally:
            self._observer.response_closed()

    async def aclose(self) -> None:
        try:
            await self._response.aclose()
        finally:
            self._observer.response_closed()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._response, name)

    def __repr__(self) -> str:
        return repr(self._response)


def _observer_of(stream: Any) -> StreamObserver | None:
    found = getattr(stream, "__dict__", {}).get(_OBSERVER_ATTR)
    return found if isinstance(found, StreamObserver) else None


def _response_property() -> property:
    def fget(self: Any) -> Any:
        real = self.__dict__.get(_RESPONSE_ATTR)
        obs = _observer_of(self)
        return real if obs is None or real is None else _ResponseProxy(real, obs)

    def fset(self: Any, value: Any) -> None:
        self.__dict__[_RESPONSE_ATTR] = value

    return property(fget, fset, doc="The HTTP response (closing it ends the span).")


def _watched(obs: StreamObserver, inner: Iterator[Any]) -> Iterator[Any]:
    """The stream's own iterator, reported to ``obs``. Only reading is watched: a
    ``break`` closes this generator at ``yield``, but the stream itself can still be read
    on (its end or its collection ends it)."""
    while True:
        obs.reading = True
        try:
            item = next(inner)
        except StopIteration:
            obs.reading = False
            obs.complete()
            return
        except BaseException as exc:
            obs.reading = False
            obs.fail(exc)  # cancellation and interrupts: abandoned, not failed
            raise
        obs.reading = False
        obs.on_item(item)
        yield item


async def _watched_async(obs: StreamObserver, inner: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``_watched`` for an async stream."""
    while True:
        obs.reading = True
        try:
            item = await inner.__anext__()
        except StopAsyncIteration:
            obs.reading = False
            obs.complete()
            return
        except BaseException as exc:
            obs.reading = False
            obs.fail(exc)
            raise
        obs.reading = False
        obs.on_item(item)
        yield item


_SYNC_CLASSES: dict[type, type] = {}
_ASYNC_CLASSES: dict[type, type] = {}


def _sync_subclass(base: type) -> type:
    cached = _SYNC_CLASSES.get(base)
    if cached is not None:
        return cached

    class Traced(base):  # type: ignore[misc]
        response = _response_property()

        def __iter__(self) -> Iterator[Any]:
            obs = _observer_of(self)
            inner = super().__iter__()
            if obs is None or inner is self:  # its own iterator: ``__next__`` observes
                return inner  # type: ignore[no-any-return]
            return _watched(obs, inner)

        def __next__(self) -> Any:
            obs = _observer_of(self)
            if obs is None:
                return super().__next__()
            obs.reading = True
            try:
                item = super().__next__()
            except StopIteration:
                obs.reading = False
                obs.complete()
                raise
            except BaseException as exc:
                obs.reading = False
                obs.fail(exc)
                raise
            obs.reading = False
            obs.on_item(item)
            return item

        def close(self) -> None:
            try:
                super().close()
            finally:
                obs = _observer_of(self)
                if obs is not None:
                    obs.abandon()

    return _register(_SYNC_CLASSES, base, Traced)


def _async_subclass(base: type) -> type:
    cached = _ASYNC_CLASSES.get(base)
    if cached is not None:
        return cached

    class Traced(base):  # type: ignore[misc]
        response = _response_property()

        def __aiter__(self) -> AsyncIterator[Any]:
            obs = _observer_of(self)
            inner = super().__aiter__()
            if obs is None or inner is self:  # its own iterator: ``__anext__`` observes
                return inner  # type: ignore[no-any-return]
            return _watched_async(obs, inner)

        async def __anext__(self) -> Any:
            obs = _observer_of(self)
            if obs is None:
                return await super().__anext__()
            obs.reading = True
            try:
                item = await super().__anext__()
            except StopAsyncIteration:
                obs.reading = False
                obs.complete()
                raise
            except BaseException as exc:
                obs.reading = False
                obs.fail(exc)
                raise
            obs.reading = False
            obs.on_item(item)
            return item

        if inspect.iscoroutinefunction(getattr(base, "close", None)):

            async def close(self) -> None:
                try:
                    await super().close()
                finally:
                    obs = _observer_of(self)
                    if obs is not None:
                        obs.abandon()

        else:  # one class for both kinds of stream (LiteLLM's): its ``close`` is sync

            def close(self) -> None:  # type: ignore[misc]  # the base's own kind of close
                try:
                    super().close()
                finally:
                    obs = _observer_of(self)
                    if obs is not None:
                        obs.abandon()

        if hasattr(base, "aclose"):

            async def aclose(self) -> None:
                try:
                    await super().aclose()
                finally:
                    obs = _observer_of(self)
                    if obs is not None:
                        obs.abandon()

    return _register(_ASYNC_CLASSES, base, Traced)


def _register(cache: dict[type, type], base: type, sub: type) -> type:
    sub.__name__ = base.__name__
    sub.__qualname__ = base.__qualname__
    sub.__module__ = base.__module__
    cache[base] = sub
    return sub


def observe(stream: Any, observer: StreamObserver, *, is_async: bool) -> bool:
    """Make ``stream`` report to ``observer``; False when it cannot be observed (the
    caller then ends the call). A stream dropped without being closed is abandoned when
    it is collected (``weakref.finalize``; the finaliser holds the observer, never the
    stream)."""
    base = type(stream)
    try:
        if base in _SYNC_CLASSES.values() or base in _ASYNC_CLASSES.values():
            stream.__dict__[_OBSERVER_ATTR] = observer  # already re-classed: re-point
        else:
            sub = _async_subclass(base) if is_async else _sync_subclass(base)
            stream.__class__ = sub
            if isinstance(stream, base):
                stream.__dict__[_OBSERVER_ATTR] = observer
            else:  # a metaclass that denies subclass isinstance: keep the SDK's class
                stream.__class__ = base
                _observe_instance(stream, observer, is_async=is_async)
    except (TypeError, AttributeError):
        return False
    with contextlib.suppress(TypeError):  # not weak-referenceable: the other ends remain
        weakref.finalize(stream, observer.abandon)
    return True


def _observe_instance(stream: Any, observer: StreamObserver, *, is_async: bool) -> None:
    """Wrap the stream's ``_iterator`` and ``close`` on the instance (see the module
    docstring); raises AttributeError when the stream has no ``_iterator`` to wrap."""
    inner = stream._iterator
    close = stream.close
    if is_async:

        async def events() -> AsyncIterator[Any]:
            while True:
                try:
                    item = await inner.__anext__()
                except StopAsyncIteration:
                    observer.complete()
                    return
                except BaseException as exc:
                    observer.fail(exc)
                    raise
                observer.on_item(item)
                yield item

        async def aclose() -> None:
            try:
                await close()
            finally:
                observer.abandon()

        stream.__dict__["_iterator"] = events()
        stream.__dict__["close"] = aclose
        return

    def sync_events() -> Iterator[Any]:
        while True:
            try:
                item = next(inner)
            except StopIteration:
                observer.complete()
                return
            except BaseException as exc:
                observer.fail(exc)
                raise
            observer.on_item(item)
            yield item

    def sync_close() -> None:
        try:
            close()
        finally:
            observer.abandon()

    stream.__dict__["_iterator"] = sync_events()
    stream.__dict__["close"] = sync_close
