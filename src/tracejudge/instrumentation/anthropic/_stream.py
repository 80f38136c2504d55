"""Observing Anthropic streams without changing what the application holds.

Why re-classing instead of a proxy: ``messages.create(stream=True)`` returns a
``Stream``, and ``messages.stream()`` returns a manager whose ``MessageStream`` reads a
raw ``Stream`` internally (``_raw_stream``) for ``__iter__``, ``text_stream``,
``get_final_message`` and ``until_done`` alike. Giving those two objects a subclass of
their own class (built once per SDK class, cached) lets every consumption path go
through one observer while ``isinstance`` checks, attributes and the SDK's own
internals keep working — a wrapping proxy would break ``isinstance(x, Stream)`` and
miss the manager's internal reads. Where an SDK's metaclass defeats ``isinstance`` for
subclasses (0.x), the instance's ``_iterator``/``close`` are wrapped instead. If the
SDK ever makes both impossible (``__slots__``), the call is ended at once with what
the request told us, so no span leaks and the application's stream is untouched.

Every end path — exhaustion, an error event, ``close()``/``__exit__``, an early
``break`` (generator close), or the stream being garbage collected — reaches the
observer; the observer makes the first end win.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

from tracejudge.instrumentation._content import to_jsonable
from tracejudge.instrumentation.anthropic._convert import get

_CALL_ATTR = "_tracejudge_call"


class StreamObserver(Protocol):
    """What a traced stream reports to (the call that owns the span)."""

    def on_event(self, event: Any) -> None:
        """One parsed stream event reached the application."""

    def on_done(self) -> None:
        """The stream was read to its end."""

    def on_error(self, error: BaseException) -> None:
        """Reading the stream raised (an ``error`` event or a transport failure)."""

    def on_close(self) -> None:
        """The stream was closed, abandoned or collected before (or after) its end."""


class MessageAccumulator:
    """Rebuilds a Message (as a plain dict) from raw Messages-API stream events.

    Why not the SDK's own snapshot: ``create(stream=True)`` has none, its location is
    private and differs across majors, and an early-abandoned stream still needs the
    partial id/model/usage recorded.
    """

    def __init__(self) -> None:
        self.message: dict[str, Any] = {"role": "assistant", "content": []}
        self.started = False
        self._json: dict[int, str] = {}

    def add(self, event: Any) -> None:
        """Fold one event in. Unknown event and delta types are ignored on purpose:
        they carry nothing the conventions record (pings, signatures, citations)."""
        kind = get(event, "type")
        if kind == "message_start":
            self._start(get(event, "message"))
        elif kind == "content_block_start":
            self._block_start(get(event, "index"), get(event, "content_block"))
        elif kind == "content_block_delta":
            self._delta(get(event, "index"), get(event, "delta"))
        elif kind == "content_block_stop":
            self._block_stop(get(event, "index"))
        elif kind == "message_delta":
            delta = get(event, "delta")
            for key in ("stop_reason", "stop_sequence"):
                value = get(delta, key)
                if value is not None:
                    self.message[key] = value
            self._merge_usage(get(event, "usage"))

    def _start(self, message: Any) -> None:
        self.started = True
        for key in ("id", "model", "role"):
            value = get(message, key)
            if isinstance(value, str):
                self.message[key] = value
        self.message["usage"] = {}
        self._merge_usage(get(message, "usage"))

    def _merge_usage(self, usage: Any) -> None:
        if usage is None:
            return
        target = self.message.setdefault("usage", {})
        data = to_jsonable(usage)
        if isinstance(data, dict):
            target.update({k: v for k, v in data.items() if v is not None})

    def _block(self, index: Any) -> dict[str, Any] | None:
        blocks: list[dict[str, Any]] = self.message["content"]
        if isinstance(index, int) and 0 <= index < len(blocks):
            return blocks[index]
        return None

    def _block_start(self, index: Any, block: Any) -> None:
        data = to_jsonable(block)
        entry: dict[str, Any] = data if isinstance(data, dict) else {"type": "unknown"}
        blocks: list[dict[str, Any]] = self.message["content"]
        if isinstance(index, int):
            while len(blocks) < index:
                blocks.append({"type": "unknown"})
            if index < len(blocks):
                blocks[index] = entry
            else:
                blocks.append(entry)
        else:
            blocks.append(entry)

    def _delta(self, index: Any, delta: Any) -> None:
        block = self._block(index)
        if block is None:
            return
        kind = get(delta, "type")
        if kind == "text_delta":
            block["text"] = str(block.get("text") or "") + str(get(delta, "text") or "")
        elif kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking") or "") + str(get(delta, "thinking") or "")
        elif kind == "input_json_delta" and isinstance(index, int):
            self._json[index] = self._json.get(index, "") + str(get(delta, "partial_json") or "")

    def _block_stop(self, index: Any) -> None:
        block = self._block(index)
        if block is None or not isinstance(index, int) or index not in self._json:
            return
        raw = self._json.pop(index)
        try:
            block["input"] = json.loads(raw) if raw.strip() else {}
        except ValueError:
            block["input"] = raw  # keep what the model sent rather than drop it


def _observer(obj: Any) -> StreamObserver | None:
    found = getattr(obj, "__dict__", {}).get(_CALL_ATTR)
    return found if found is not None else None


_SYNC_CLASSES: dict[type, type] = {}
_ASYNC_CLASSES: dict[type, type] = {}


def _sync_subclass(base: type) -> type:
    cached = _SYNC_CLASSES.get(base)
    if cached is not None:
        return cached

    class Traced(base):  # type: ignore[misc]
        def __iter__(self) -> Iterator[Any]:
            obs = _observer(self)
            try:
                for item in super().__iter__():
                    if obs is not None:
                        obs.on_event(item)
                    yield item
            except Exception as exc:
                if obs is not None:
                    obs.on_error(exc)
                raise
            else:
                if obs is not None:
                    obs.on_done()
            finally:
                if obs is not None:
                    obs.on_close()

        def __next__(self) -> Any:
            obs = _observer(self)
            try:
                item = super().__next__()
            except StopIteration:
                if obs is not None:
                    obs.on_done()
                raise
            except Exception as exc:
                if obs is not None:
                    obs.on_error(exc)
                raise
            if obs is not None:
                obs.on_event(item)
            return item

        def close(self) -> None:
            try:
                super().close()
            finally:
                obs = _observer(self)
                if obs is not None:
                    obs.on_close()

    Traced.__name__ = base.__name__
    Traced.__qualname__ = base.__qualname__
    Traced.__module__ = base.__module__
    _SYNC_CLASSES[base] = Traced
    return Traced


def _async_subclass(base: type) -> type:
    cached = _ASYNC_CLASSES.get(base)
    if cached is not None:
        return cached

    class Traced(base):  # type: ignore[misc]
        async def __aiter__(self) -> AsyncIterator[Any]:
            obs = _observer(self)
            try:
                async for item in super().__aiter__():
                    if obs is not None:
                        obs.on_event(item)
                    yield item
            except Exception as exc:
                if obs is not None:
                    obs.on_error(exc)
                raise
            else:
                if obs is not None:
                    obs.on_done()
            finally:
                if obs is not None:
                    obs.on_close()

        async def __anext__(self) -> Any:
            obs = _observer(self)
            try:
                item = await super().__anext__()
            except StopAsyncIteration:
                if obs is not None:
                    obs.on_done()
                raise
            except Exception as exc:
                if obs is not None:
                    obs.on_error(exc)
                raise
            if obs is not None:
                obs.on_event(item)
            return item

        async def close(self) -> None:
            try:
                await super().close()
            finally:
                obs = _observer(self)
                if obs is not None:
                    obs.on_close()

    Traced.__name__ = base.__name__
    Traced.__qualname__ = base.__qualname__
    Traced.__module__ = base.__module__
    _ASYNC_CLASSES[base] = Traced
    return Traced


def observe_stream(stream: Any, observer: StreamObserver, *, is_async: bool) -> bool:
    """Make ``stream`` report to ``observer``; False when it cannot be observed.

    Re-classing is the first choice. Some SDK releases (anthropic 0.3x-0.4x) give
    ``Stream`` a metaclass whose ``isinstance`` answers False for every subclass
    instance; there the stream keeps its class and its private ``_iterator`` and its
    ``close`` are wrapped on the instance instead, so ``isinstance(s, Stream)`` holds
    in every SDK. A stream the application drops without closing is reported closed
    when it is collected (``weakref.finalize``), so an abandoned stream still ends
    its span.
    """
    base = type(stream)
    if base in _SYNC_CLASSES.values() or base in _ASYNC_CLASSES.values():
        stream.__dict__[_CALL_ATTR] = observer
        return True
    try:
        sub = _async_subclass(base) if is_async else _sync_subclass(base)
        stream.__class__ = sub
        if not isinstance(stream, base):
            stream.__class__ = base
            _observe_instance(stream, observer, is_async=is_async)
        else:
            stream.__dict__[_CALL_ATTR] = observer
    except (TypeError, AttributeError):
        return False
    # Not weak-referenceable: close/exhaustion still end the span.
    with contextlib.suppress(TypeError):
        weakref.finalize(stream, observer.on_close)
    return True


def _observe_instance(stream: Any, observer: StreamObserver, *, is_async: bool) -> None:
    """Wrap the stream's ``_iterator`` and ``close`` on the instance (see above);
    raises AttributeError when the stream has no ``_iterator`` to wrap."""
    inner = stream._iterator
    close = stream.close
    if is_async:

        async def events() -> AsyncIterator[Any]:
            try:
                async for item in inner:
                    observer.on_event(item)
                    yield item
            except Exception as exc:
                observer.on_error(exc)
                raise
            else:
                observer.on_done()
            finally:
                observer.on_close()

        async def aclose() -> None:
            try:
                await close()
            finally:
                observer.on_close()

        stream.__dict__["_iterator"] = events()
        stream.__dict__["close"] = aclose
        return

    def sync_events() -> Iterator[Any]:
        try:
            for item in inner:
                observer.on_event(item)
                yield item
        except Exception as exc:
            observer.on_error(exc)
            raise
        else:
            observer.on_done()
        finally:
            observer.on_close()

    def sync_close() -> None:
        try:
            close()
        finally:
            observer.on_close()

    stream.__dict__["_iterator"] = sync_events()
    stream.__dict__["close"] = sync_close
