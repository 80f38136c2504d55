"""The ``with`` blocks the instrumentation hands the application, written once.

- ``InvocationScope``: ``agent()`` and ``tool()`` hand the application an invocation on
  ``with``/``async with`` and end it on the way out — ``fail(exc)`` when the block
  raised, ``stop()`` otherwise. The scope's own ``__enter__`` (its checks and what it
  starts) stays with the scope.
- ``ContextValueScope``: ``tool_call_id()`` and ``route_key()`` set a context variable
  for the block, once, and give it back on the way out — or, when the block is left in
  another context than it was entered in (an async generator finalised elsewhere), clear
  it there.
"""

from __future__ import annotations

import contextvars
from types import TracebackType
from typing import Generic, Protocol, Self, TypeVar


class Ends(Protocol):
    """What a scope ends: an invocation (``AgentInvocation``, ``ToolInvocation``)."""

    def stop(self) -> None: ...

    def fail(self, error: BaseException) -> None: ...


R = TypeVar("R", bound=Ends)


class InvocationScope(Generic[R]):
    """``__exit__`` and the async forms over the invocation ``__enter__`` started
    (``_run``); a subclass writes ``__enter__`` and sets ``_run``."""

    _run: R | None

    def __enter__(self) -> R:
        raise NotImplementedError

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        run = self._run
        if run is None:
            return
        if exc is not None:
            run.fail(exc)
        else:
            run.stop()

    async def __aenter__(self) -> R:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)


T = TypeVar("T")


class ContextValueScope(Generic[T]):
    """Sets ``var`` to ``value`` for a ``with`` block; can be entered once (``what``
    names the scope in that error)."""

    __slots__ = ("_token", "_value", "_var", "_what")

    def __init__(self, var: contextvars.ContextVar[T | None], value: T, what: str) -> None:
        self._var = var
        self._value = value
        self._what = what
        self._token: contextvars.Token[T | None] | None = None

    def __enter__(self) -> Self:
        if self._token is not None:
            raise RuntimeError(f"{self._what} scope can be entered only once")
        self._token = self._var.set(self._value)
        return self

    def __exit__(self, *exc_info: object) -> None:
        token, self._token = self._token, None
        if token is not None:
            try:
                self._var.reset(token)
            except ValueError:  # exited in another context than entered
                self._var.set(None)
