"""OpenAI patcher: ``chat.completions.create``, ``responses.create``, ``embeddings.create``.

Why these methods (on the resource classes, sync and async): they are the public entry
points every higher-level helper funnels into. ``chat.completions.stream()`` and
``responses.stream()`` call ``create(stream=True)``; ``with_raw_response`` wraps the bound
``create``; so one wrapper per method covers streams, helpers and raw responses without
touching the SDK's private request path.

Per call the wrapper does: the duplicate-span check, one ``ModelCallTelemetry`` (span
started with precomputed attribute keys), the SDK call with the span current, then the
result translation inside the runtime's guard, so a telemetry bug can never turn a
successful SDK call into an exception (unless ``raise_internal_errors``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

from tracejudge.instrumentation._context import should_skip_model_span
from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._patcher import (
    MethodPatches,
    sdk_importable,
    warn_once,
    wrapped_by_other_instrumentor,
)
from tracejudge.instrumentation._runtime import Runtime
from tracejudge.instrumentation.openai import _chat, _embeddings, _responses
from tracejudge.instrumentation.openai._stream import AsyncStream, StreamState, SyncStream

__all__ = ["OpenAIPatcher"]

_RAW_HEADER: Final = "X-Stainless-Raw-Response"

Start = Callable[[Runtime, Any, dict[str, Any]], ModelCallTelemetry]
Finish = Callable[[ModelCallTelemetry, Any], None]


class _Endpoint:
    """How to start/finish one endpoint's span and accumulate its stream."""

    __slots__ = ("accumulator", "finish", "start")

    def __init__(self, start: Start, finish: Finish, accumulator: Callable[[], Any] | None) -> None:
        self.start = start
        self.finish = finish
        self.accumulator = accumulator


_CHAT = _Endpoint(_chat.start, _chat.finish, _chat.ChatStreamAccumulator)
_RESPONSES = _Endpoint(_responses.start, _responses.finish, _responses.ResponsesStreamAccumulator)
_EMBEDDINGS = _Endpoint(_embeddings.start, _embeddings.finish, None)

# (module, sync class, async class, endpoint, required methods, optional methods)
# ``parse`` (structured outputs) posts directly instead of calling ``create``; it is
# patched when the installed SDK has it.
_TARGETS: Final = (
    (
        "openai.resources.chat.completions.completions",
        "Completions",
        "AsyncCompletions",
        _CHAT,
        ("create",),
        ("parse",),
    ),
    (
        "openai.resources.responses.responses",
        "Responses",
        "AsyncResponses",
        _RESPONSES,
        ("create",),
        ("parse",),
    ),
    ("openai.resources.embeddings", "Embeddings", "AsyncEmbeddings", _EMBEDDINGS, ("create",), ()),
)


class OpenAIPatcher:
    """The ``Patcher`` for the ``openai`` SDK (v1 and later)."""

    name = "openai"

    def __init__(self) -> None:
        self._patches = MethodPatches()

    def available(self) -> bool:
        """True when the ``openai`` package is importable."""
        return sdk_importable("openai")

    def patch(self, runtime: Runtime) -> None:
        """Wrap ``create`` (and ``parse`` where present) on the sync and async resources."""
        import importlib

        base = importlib.import_module("openai._base_client")
        for cls_name in ("SyncAPIClient", "AsyncAPIClient"):
            request = getattr(base, cls_name).__dict__.get("request")
            foreign = wrapped_by_other_instrumentor(request, "openai")
            if foreign is not None:
                # Instrumentors that patch the request choke point (OpenInference) trace
                # every endpoint; a span of ours would be a duplicate parent of theirs.
                warn_once(
                    "openai:request",
                    f"openai {cls_name}.request is already wrapped by {foreign}; tracejudge "
                    "does not patch openai, to avoid duplicate spans",
                )
                return
        for module_name, sync_cls, async_cls, endpoint, required, optional in _TARGETS:
            module = importlib.import_module(module_name)
            for cls_name, make in ((sync_cls, _sync_wrapper), (async_cls, _async_wrapper)):
                owner = getattr(module, cls_name)
                for method in (*required, *optional):
                    current = owner.__dict__.get(method)
                    if current is None:
                        if method in optional:
                            continue
                        current = getattr(owner, method)  # AttributeError: the SDK moved
                    foreign = wrapped_by_other_instrumentor(current, "openai")
                    if foreign is not None:
                        warn_once(
                            f"openai:{cls_name}.{method}",
                            f"{cls_name}.{method} is already wrapped by {foreign}; tracejudge "
                            "leaves it to that instrumentor to avoid duplicate spans",
                        )
                        continue
                    self._patches.patch_method(
                        owner, method, functools.partial(make, runtime=runtime, endpoint=endpoint)
                    )

    def unpatch(self) -> None:
        """Restore the original methods."""
        self._patches.restore()


def _begin(runtime: Runtime, endpoint: _Endpoint, resource: Any, kwargs: dict[str, Any]) -> Any:
    """Start the call's telemetry, or return None (skip) without raising."""
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


def _raw_mode(kwargs: dict[str, Any]) -> str | None:
    headers = kwargs.get("extra_headers")
    if not headers:
        return None
    value = headers.get(_RAW_HEADER) if isinstance(headers, dict) else None
    return value if isinstance(value, str) else None


def _after(
    runtime: Runtime,
    endpoint: _Endpoint,
    call: ModelCallTelemetry,
    result: Any,
    kwargs: dict[str, Any],
    stream_type: type[SyncStream] | type[AsyncStream],
) -> Any:
    """Record a returned result; returns what the caller gets (maybe a wrapped stream)."""
    try:
        raw = _raw_mode(kwargs)
        streaming = kwargs.get("stream") is True
        if raw is not None and raw != "stream" and streaming and endpoint.accumulator:
            wrapped = _wrap_raw_stream(runtime, endpoint, call, result, stream_type)
            if wrapped:
                return result
        if raw == "stream" or (raw is not None and streaming):
            # with_streaming_response: the body is the caller's to read; we cannot see it
            # without consuming it, so the span has the request side only.
            call.end()
            return result
        if raw is not None and callable(getattr(result, "parse", None)):
            # with_raw_response ("true"; "raw" in older SDKs): a LegacyAPIResponse.
            endpoint.finish(call, result.parse())  # parse() caches: the caller gets the same
            call.end()
            return result
        if streaming and endpoint.accumulator is not None:
            return stream_type(result, StreamState(runtime, call, endpoint.accumulator()))
        endpoint.finish(call, result)
        call.end()
        return result
    except Exception as exc:
        runtime.internal_error(exc)
        if not call.ended:
            call.end()
        if runtime.raise_internal_errors:
            raise
        return result


def _wrap_raw_stream(
    runtime: Runtime,
    endpoint: _Endpoint,
    call: ModelCallTelemetry,
    result: Any,
    stream_type: type[SyncStream] | type[AsyncStream],
) -> bool:
    """``with_raw_response.create(stream=True)``: put a wrapped stream into the raw
    response's parse cache, so ``parse()`` hands the caller a traced stream.

    Feature-detected (the cache is an SDK detail): returns False when it is not there.
    """
    cache = getattr(result, "_parsed_by_type", None)
    key = getattr(result, "_cast_to", None)
    if not isinstance(cache, dict) or key is None or endpoint.accumulator is None:
        return False
    stream = result.parse()
    cache[key] = stream_type(stream, StreamState(runtime, call, endpoint.accumulator()))
    return True


def _sync_wrapper(
    original: Callable[..., Any], *, runtime: Runtime, endpoint: _Endpoint
) -> Callable[..., Any]:
    @functools.wraps(original)
    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = _begin(runtime, endpoint, self, kwargs)
        if call is None:
            return original(self, *args, **kwargs)
        try:
            result = original(self, *args, **kwargs)
        except BaseException as exc:
            call.deactivate()
            with runtime.guard:
                call.fail(exc)
            raise
        call.deactivate()
        return _after(runtime, endpoint, call, result, kwargs, SyncStream)

    return create


def _async_wrapper(
    original: Callable[..., Any], *, runtime: Runtime, endpoint: _Endpoint
) -> Callable[..., Any]:
    @functools.wraps(original)
    async def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = _begin(runtime, endpoint, self, kwargs)
        if call is None:
            return await original(self, *args, **kwargs)
        try:
            result = await original(self, *args, **kwargs)
        except BaseException as exc:
            call.deactivate()
            with runtime.guard:
                call.fail(exc)
            raise
        call.deactivate()
        return _after(runtime, endpoint, call, result, kwargs, AsyncStream)

    return create
