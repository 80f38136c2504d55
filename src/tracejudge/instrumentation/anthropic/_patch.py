"""The wrappers installed on ``Messages``/``AsyncMessages`` and ``AnthropicPatcher``.

Why these methods: ``create`` (sync/async, ``stream=True`` too), ``parse`` (2.x) and
``stream`` (sync/async context managers) are the Messages API surface in every SDK
major we claim (0.40 → 2.x); ``with_raw_response``/``with_streaming_response`` look the
method up on the class at call time, so they pass through these wrappers as well.
Each wrapper runs the user's call first-class: telemetry work happens before and after
it, inside the runtime's guard, and the user's exception is re-raised untouched.

``messages.stream()`` sends its request in the manager's ``__enter__``, so the span
starts there (its duration is the request's, and the SDK's own span is switched off
while it is sent); the manager and the raw stream inside it are given traced
subclasses of their own classes (see ``_stream``), so ``text_stream``,
``get_final_message()`` and plain iteration are all observed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from tracejudge.instrumentation._patcher import MethodPatches, sdk_importable
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation.anthropic._call import AnthropicCall
from tracejudge.instrumentation.anthropic._suppress import SdkSpanSuppressor

_PENDING = "_tracejudge_pending"
_ACTIVE = "_tracejudge_active"


class _Pending:
    """What a stream manager needs to start its call when it is entered."""

    __slots__ = ("kwargs", "resource", "runtime")

    def __init__(self, runtime: Runtime, resource: Any, kwargs: Mapping[str, Any]) -> None:
        self.runtime, self.resource, self.kwargs = runtime, resource, dict(kwargs)

    def start(self) -> AnthropicCall | None:
        return AnthropicCall.start(self.runtime, self.resource, self.kwargs, stream=True)


def _pending_of(manager: Any) -> _Pending | None:
    pending = getattr(manager, "__dict__", {}).pop(_PENDING, None)
    return pending if isinstance(pending, _Pending) else None


def _close_active(manager: Any) -> None:
    """End the manager's call when its ``with`` block exits (0.x ``MessageStream.close``
    closes the HTTP response directly, bypassing the raw stream we observe)."""
    call = getattr(manager, "__dict__", {}).pop(_ACTIVE, None)
    if isinstance(call, AnthropicCall):
        call.on_close()


def _attach(call: AnthropicCall, message_stream: Any, *, is_async: bool) -> None:
    """Observe the raw event stream a ``MessageStream`` reads (``_raw_stream`` in every
    SDK major); without one the call ends now rather than leak."""
    raw = getattr(message_stream, "_raw_stream", None)
    if raw is None:
        raw = message_stream  # 0.2x-style MessageStream that *is* a Stream
    call.watch(raw, is_async=is_async)


_MANAGER_CLASSES: dict[type, type] = {}


def _traced_manager_class(base: type, *, is_async: bool) -> type:
    cached = _MANAGER_CLASSES.get(base)
    if cached is not None:
        return cached
    if is_async:

        class TracedAsync(base):  # type: ignore[misc]
            async def __aenter__(self) -> Any:
                pending = _pending_of(self)
                call = pending.start() if pending is not None else None
                if call is None:
                    return await super().__aenter__()
                call.enter()
                try:
                    stream = await super().__aenter__()
                except BaseException as exc:
                    call.exit()
                    call.failed(exc)
                    raise
                call.exit()
                _attach(call, stream, is_async=True)
                self.__dict__[_ACTIVE] = call
                return stream

            async def __aexit__(self, *exc_info: Any) -> Any:
                try:
                    return await super().__aexit__(*exc_info)
                finally:
                    _close_active(self)

        cls: type = TracedAsync
    else:

        class TracedSync(base):  # type: ignore[misc]
            def __enter__(self) -> Any:
                pending = _pending_of(self)
                call = pending.start() if pending is not None else None
                if call is None:
                    return super().__enter__()
                call.enter()
                try:
                    stream = super().__enter__()
                except BaseException as exc:
                    call.exit()
                    call.failed(exc)
                    raise
                call.exit()
                _attach(call, stream, is_async=False)
                self.__dict__[_ACTIVE] = call
                return stream

            def __exit__(self, *exc_info: Any) -> Any:
                try:
                    return super().__exit__(*exc_info)
                finally:
                    _close_active(self)

        cls = TracedSync
    cls.__name__, cls.__qualname__ = base.__name__, base.__qualname__
    cls.__module__ = base.__module__
    _MANAGER_CLASSES[base] = cls
    return cls


def _wrap_create(runtime: Runtime) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        @functools.wraps(original)
        def create(self: Any, *args: Any, **kwargs: Any) -> Any:
            call = AnthropicCall.start(runtime, self, kwargs, stream=kwargs.get("stream") is True)
            if call is None:
                return original(self, *args, **kwargs)
            call.enter()
            try:
                result = original(self, *args, **kwargs)
            except BaseException as exc:
                call.exit()
                call.failed(exc)
                raise
            call.exit()
            call.returned(result, is_async=False)
            return result

        return create

    return make


def _wrap_acreate(runtime: Runtime) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        @functools.wraps(original)
        async def create(self: Any, *args: Any, **kwargs: Any) -> Any:
            call = AnthropicCall.start(runtime, self, kwargs, stream=kwargs.get("stream") is True)
            if call is None:
                return await original(self, *args, **kwargs)
            call.enter()
            try:
                result = await original(self, *args, **kwargs)
            except BaseException as exc:
                call.exit()
                call.failed(exc)
                raise
            call.exit()
            await call.returned_async(result)
            return result

        return create

    return make


def _wrap_stream(runtime: Runtime, *, is_async: bool) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        @functools.wraps(original)
        def stream(self: Any, *args: Any, **kwargs: Any) -> Any:
            manager = original(self, *args, **kwargs)
            with runtime.guard:
                traced = _traced_manager_class(type(manager), is_async=is_async)
                manager.__class__ = traced
                manager.__dict__[_PENDING] = _Pending(runtime, self, kwargs)
            return manager

        return stream

    return make


class AnthropicPatcher:
    """The ``Patcher`` for the ``anthropic`` SDK (registered by name in ``_patcher``)."""

    name = "anthropic"

    def __init__(self) -> None:
        self._patches = MethodPatches()
        self._suppressor = SdkSpanSuppressor()

    def available(self) -> bool:
        """True when the anthropic SDK is importable (nothing is imported)."""
        return sdk_importable("anthropic")

    def patch(self, runtime: Runtime) -> None:
        """Wrap the Messages surface; raises AttributeError/ImportError if it moved.

        ``create`` and ``stream`` are required (every claimed SDK has them); ``parse``
        (2.x structured outputs) and the beta Messages resource are wrapped where the
        installed SDK has them — their shapes are the same Messages API.
        """
        from anthropic.resources.messages import AsyncMessages, Messages

        self._wrap_resource(Messages, AsyncMessages, runtime, required=("create", "stream"))
        try:
            from anthropic.resources.beta.messages import AsyncMessages as BetaAsync
            from anthropic.resources.beta.messages import Messages as BetaMessages
        except ImportError:  # an SDK without the beta resource: nothing to trace there
            pass
        else:
            self._wrap_resource(BetaMessages, BetaAsync, runtime, required=())
        self._suppressor.install()

    def _wrap_resource(
        self, sync: type, async_: type, runtime: Runtime, *, required: tuple[str, ...]
    ) -> None:
        wrappers: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
            "create": (_wrap_create(runtime), _wrap_acreate(runtime)),
            "parse": (_wrap_create(runtime), _wrap_acreate(runtime)),
            "stream": (
                _wrap_stream(runtime, is_async=False),
                _wrap_stream(runtime, is_async=True),
            ),
        }
        for method, (make_sync, make_async) in wrappers.items():
            for owner, make in ((sync, make_sync), (async_, make_async)):
                if method in required or method in owner.__dict__:
                    self._patches.patch_method(owner, method, make)

    def unpatch(self) -> None:
        """Restore every original (safe after a partial patch or none)."""
        self._patches.restore()
        self._suppressor.uninstall()


__all__ = ["AnthropicPatcher"]
