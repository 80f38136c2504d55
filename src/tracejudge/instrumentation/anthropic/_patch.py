"""Anthropic provider: the ``ProviderSpec`` of the Messages API, and its stream managers.

Why these methods: ``create`` (sync/async, ``stream=True`` too) and ``parse`` (2.x) are
the Messages API surface every higher-level helper of the SDK majors we claim (0.40 →
2.x) reaches, on ``messages`` and on ``beta.messages`` (the same API with beta
features); ``with_raw_response``/``with_streaming_response`` look the method up on the
class at call time, so they pass through the shared wrapper as well.

``messages.stream()`` is the one Anthropic-specific addition (the ``Extension``): it
posts by itself, not through ``create``, and sends its request in the manager's
``__enter__``, so the span starts there (its duration is the request's). The manager
is given a subclass of its own class (built once per SDK class) whose ``__enter__``
runs the shared call lifecycle and hands the raw stream inside the ``MessageStream``
(``_raw_stream`` in every SDK major) to the shared stream observer, so ``text_stream``,
``get_final_message()`` and plain iteration are all observed.

While a traced call is in flight the SDK's own span is switched off (``_suppress``):
exactly one span per call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from contextvars import Token
from typing import Any, Final

from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._patcher import MethodPatches
from tracejudge.instrumentation._provider import (
    Endpoint,
    ProviderPatcher,
    ProviderSpec,
    Target,
    begin,
    failed,
    watch,
)
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation._stream import StreamObserver
from tracejudge.instrumentation.anthropic import _messages
from tracejudge.instrumentation.anthropic._stream import MessageAccumulator
from tracejudge.instrumentation.anthropic._suppress import (
    SdkSpanSuppressor,
    restore_sdk_span,
    suppress_sdk_span,
)

_PENDING = "_tracejudge_pending"
_ACTIVE = "_tracejudge_active"

MESSAGES = Endpoint(_messages.start, _messages.finish, MessageAccumulator)


class _SdkSpanOff:
    """Switch the SDK's own span off while our call is in flight (see ``_suppress``)."""

    def enter(self) -> object:
        return suppress_sdk_span()

    def exit(self, token: object) -> None:
        if isinstance(token, Token):
            restore_sdk_span(token)


class _Pending:
    """What a stream manager needs to start its call when it is entered."""

    __slots__ = ("kwargs", "resource", "runtime", "spec")

    def __init__(
        self, runtime: Runtime, spec: ProviderSpec, resource: Any, kwargs: Mapping[str, Any]
    ) -> None:
        self.runtime, self.spec, self.resource = runtime, spec, resource
        self.kwargs = {**kwargs, "stream": True}  # stream() always streams


def _pending_of(manager: Any) -> _Pending | None:
    pending = getattr(manager, "__dict__", {}).pop(_PENDING, None)
    return pending if isinstance(pending, _Pending) else None


def _close_active(manager: Any) -> None:
    """End the manager's call when its ``with`` block exits (0.x ``MessageStream.close``
    closes the HTTP response directly, bypassing the raw stream we observe)."""
    observer = getattr(manager, "__dict__", {}).pop(_ACTIVE, None)
    if isinstance(observer, StreamObserver):
        observer.abandon()


def _started(pending: _Pending | None) -> ModelCallTelemetry | None:
    if pending is None:
        return None
    return begin(pending.runtime, MESSAGES, pending.resource, pending.kwargs)


def _sent(
    manager: Any, pending: _Pending, call: ModelCallTelemetry, stream: Any, *, is_async: bool
) -> None:
    """The request was sent: observe the raw event stream the ``MessageStream`` reads
    (a 0.2x-style MessageStream *is* the Stream); without one the call ends now."""
    raw = getattr(stream, "_raw_stream", None)
    if raw is None:
        raw = stream
    observer: StreamObserver | None = None
    with pending.runtime.guard:
        observer = watch(pending.runtime, pending.spec, MESSAGES, call, raw, is_async=is_async)
    if observer is None:
        if not call.ended:
            call.end()
        return
    manager.__dict__[_ACTIVE] = observer


_MANAGER_CLASSES: dict[type, type] = {}
_SCOPE: Final = _SdkSpanOff()


def _traced_manager_class(base: type, *, is_async: bool) -> type:
    cached = _MANAGER_CLASSES.get(base)
    if cached is not None:
        return cached
    if is_async:

        class TracedAsync(base):  # type: ignore[misc]
            async def __aenter__(self) -> Any:
                pending = _pending_of(self)
                call = _started(pending)
                if pending is None or call is None:
                    return await super().__aenter__()
                token = _SCOPE.enter()
                try:
                    stream = await super().__aenter__()
                except BaseException as exc:
                    _SCOPE.exit(token)
                    call.deactivate()
                    failed(pending.runtime, call, exc)
                    raise
                _SCOPE.exit(token)
                call.deactivate()
                _sent(self, pending, call, stream, is_async=True)
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
                call = _started(pending)
                if pending is None or call is None:
                    return super().__enter__()
                token = _SCOPE.enter()
                try:
                    stream = super().__enter__()
                except BaseException as exc:
                    _SCOPE.exit(token)
                    call.deactivate()
                    failed(pending.runtime, call, exc)
                    raise
                _SCOPE.exit(token)
                call.deactivate()
                _sent(self, pending, call, stream, is_async=False)
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


def _wrap_stream(runtime: Runtime, spec: ProviderSpec, *, is_async: bool) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        @functools.wraps(original)
        def stream(self: Any, *args: Any, **kwargs: Any) -> Any:
            manager = original(self, *args, **kwargs)
            with runtime.guard:
                traced = _traced_manager_class(type(manager), is_async=is_async)
                manager.__class__ = traced
                manager.__dict__[_PENDING] = _Pending(runtime, spec, self, kwargs)
            return manager

        return stream

    return make


class _StreamManagers:
    """``messages.stream()`` on both resources, and the SDK-span suppressor."""

    def __init__(self) -> None:
        self._suppressor = SdkSpanSuppressor()

    def install(self, runtime: Runtime, patches: MethodPatches, spec: ProviderSpec) -> None:
        from anthropic.resources.messages import AsyncMessages, Messages

        owners: list[tuple[type, bool, bool]] = [
            (Messages, False, True),
            (AsyncMessages, True, True),
        ]
        try:
            from anthropic.resources.beta.messages import AsyncMessages as BetaAsync
            from anthropic.resources.beta.messages import Messages as BetaMessages
        except ImportError:  # an SDK without the beta resource: nothing to trace there
            pass
        else:
            owners += [(BetaMessages, False, False), (BetaAsync, True, False)]
        for owner, is_async, required in owners:
            if required or "stream" in owner.__dict__:
                patches.patch_method(
                    owner, "stream", _wrap_stream(runtime, spec, is_async=is_async)
                )
        self._suppressor.install()

    def uninstall(self) -> None:
        self._suppressor.uninstall()


SPEC: Final = ProviderSpec(
    name="anthropic",
    sdk_module="anthropic",
    targets=(
        Target(
            "anthropic.resources.messages",
            "Messages",
            "AsyncMessages",
            MESSAGES,
            optional=("parse",),
        ),
        Target(
            "anthropic.resources.beta.messages",
            "Messages",
            "AsyncMessages",
            MESSAGES,
            required=(),
            optional=("create", "parse"),
            must_import=False,
        ),
    ),
    stream_classes=("anthropic.Stream", "anthropic.AsyncStream"),
    stream_error_type=_messages.stream_error_type,
    scope=_SCOPE,
    extension=_StreamManagers,
)


class AnthropicPatcher(ProviderPatcher):
    """The ``Patcher`` for the ``anthropic`` SDK (registered by name in ``_patcher``)."""

    def __init__(self) -> None:
        super().__init__(SPEC)


__all__ = ["SPEC", "AnthropicPatcher"]
