"""Stream wrappers: the span of a streamed call ends exactly once, however the stream ends.

Why: the most common span leak in GenAI instrumentations is a stream the caller stops
reading (``break``, closing early, dropping it). The wrappers here end the span on
exhaustion, on error, on ``close()``/``__exit__`` and, as a last resort, when the stream
object is garbage-collected (``weakref.finalize``; the finaliser holds the state, never
the wrapper). Everything else (``.response``, helpers) is delegated to the SDK stream,
so the SDK's own ``.stream()`` helpers keep working on top of a wrapped stream.
"""

from __future__ import annotations

import time
import weakref
from types import TracebackType
from typing import Any, Protocol

from tracejudge import semconv
from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._runtime import Runtime


class Accumulator(Protocol):
    """Folds stream items in and records them on the call at the end."""

    def add(self, item: Any) -> None: ...

    def finish(self, call: ModelCallTelemetry, *, complete: bool) -> None: ...


class StreamState:
    """Accumulator + telemetry of one stream; shared by a wrapper and its finaliser."""

    __slots__ = ("acc", "call", "first", "runtime")

    def __init__(self, runtime: Runtime, call: ModelCallTelemetry, acc: Accumulator) -> None:
        self.runtime = runtime
        self.call = call
        self.acc = acc
        self.first = True

    def on_item(self, item: Any) -> None:
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
        if not self.call.claim():
            return
        with self.runtime.guard:
            self.acc.finish(self.call, complete=True)
        with self.runtime.guard:
            self.call.end(claimed=True)

    def fail(self, exc: BaseException) -> None:
        if not self.call.claim():
            return
        with self.runtime.guard:
            self.acc.finish(self.call, complete=False)
        with self.runtime.guard:
            self.call.fail(exc, claimed=True)

    def abandon(self) -> None:
        """The caller stopped reading: keep what arrived, end without an error status."""
        if not self.call.claim():
            return
        with self.runtime.guard:
            self.acc.finish(self.call, complete=False)
        with self.runtime.guard:
            self.call.abandon(claimed=True)


class _ResponseProxy:
    """The HTTP response as the SDK's ``.stream()`` helpers see it.

    The helpers close the raw response directly (not the stream) when their ``with``
    block exits; routing that close through here ends the span right then instead of
    at garbage collection. Everything else is delegated to the real response.
    """

    __slots__ = ("_response", "_state")

    def __init__(self, response: Any, state: StreamState) -> None:
        self._response = response
        self._state = state

    def close(self) -> None:
        try:
            self._response.close()
        finally:
            self._state.abandon()

    async def aclose(self) -> None:
        try:
            await self._response.aclose()
        finally:
            self._state.abandon()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._response, name)


class SyncStream:
    """Wraps ``openai.Stream``; iterate it exactly like the original."""

    __slots__ = ("__weakref__", "_state", "_stream")

    def __init__(self, stream: Any, state: StreamState) -> None:
        self._stream = stream
        self._state = state
        weakref.finalize(self, state.abandon)

    def __iter__(self) -> SyncStream:
        return self

    def __next__(self) -> Any:
        try:
            item = next(self._stream)
        except StopIteration:
            self._state.complete()
            raise
        except BaseException as exc:
            if isinstance(exc, Exception):
                self._state.fail(exc)
            else:  # GeneratorExit, KeyboardInterrupt, task cancellation: not a model error
                self._state.abandon()
            raise
        self._state.on_item(item)
        return item

    def close(self) -> None:
        """Close the HTTP response and end the span (as abandoned if unfinished)."""
        try:
            self._stream.close()
        finally:
            self._state.abandon()

    @property
    def response(self) -> Any:
        """The HTTP response; closing it ends the span (see ``_ResponseProxy``)."""
        return _ResponseProxy(self._stream.response, self._state)

    def __enter__(self) -> SyncStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __repr__(self) -> str:
        return f"<tracejudge traced {self._stream!r}>"


class AsyncStream:
    """Wraps ``openai.AsyncStream``; iterate it exactly like the original."""

    __slots__ = ("__weakref__", "_state", "_stream")

    def __init__(self, stream: Any, state: StreamState) -> None:
        self._stream = stream
        self._state = state
        weakref.finalize(self, state.abandon)

    def __aiter__(self) -> AsyncStream:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self._stream.__anext__()
        except StopAsyncIteration:
            self._state.complete()
            raise
        except BaseException as exc:
            if isinstance(exc, Exception):
                self._state.fail(exc)
            else:  # GeneratorExit, KeyboardInterrupt, task cancellation: not a model error
                self._state.abandon()
            raise
        self._state.on_item(item)
        return item

    async def close(self) -> None:
        """Close the HTTP response and end the span (as abandoned if unfinished)."""
        try:
            await self._stream.close()
        finally:
            self._state.abandon()

    @property
    def response(self) -> Any:
        """The HTTP response; closing it ends the span (see ``_ResponseProxy``)."""
        return _ResponseProxy(self._stream.response, self._state)

    async def __aenter__(self) -> AsyncStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __repr__(self) -> str:
        return f"<tracejudge traced {self._stream!r}>"
