"""A sync SDK call that returned a coroutine: the span follows the coroutine to its end.

Why: LiteLLM's sync functions return a coroutine when asked to
(``completion(..., acompletion=True)``, ``embedding(..., aembedding=True)``); the request
is made when the application awaits it. Ending the span when the function returns would
keep the request only and lose the response, the usage and any error. ``follow`` gives
the application, in the SDK's coroutine's place, a coroutine that makes the call's span
current while the SDK's one runs (so an SDK call inside it is not traced twice), then
settles the call with its result (a response recorded or a stream observed: the
provider template's ``returned_async``) or fails it with its exception, which it
re-raises unchanged. A coroutine dropped without being awaited ends its span when it is
collected (no error status: not running it was the caller's choice); one closed or
cancelled while it runs ends it then, as an abandoned call.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from tracejudge.instrumentation._genai import ModelCallTelemetry
from tracejudge.instrumentation._runtime import Runtime

Settle = Callable[[Any], Awaitable[None]]
"""``(result)``: record what the SDK's coroutine returned and end the call (or hand its
stream to an observer); never raises unless the runtime raises internal errors."""
Fail = Callable[[BaseException], None]
"""``(exception)``: end the call with what the SDK's coroutine raised."""


def follow(
    runtime: Runtime,
    call: ModelCallTelemetry,
    inner: Coroutine[Any, Any, Any],
    settle: Settle,
    fail: Fail,
) -> Coroutine[Any, Any, Any]:
    """The coroutine to return in ``inner``'s place: awaiting it awaits ``inner`` with
    ``call``'s span current and returns (or raises) what ``inner`` does."""
    unstarted: list[weakref.finalize[Any, Any]] = []
    outer = _awaited(call, inner, settle, fail, unstarted)
    # Until it starts, collecting it ends the span; the finaliser holds the call, never
    # the coroutine (that would keep it alive).
    unstarted.append(weakref.finalize(outer, _dropped, runtime, call))
    return outer


async def _awaited(
    call: ModelCallTelemetry,
    inner: Coroutine[Any, Any, Any],
    settle: Settle,
    fail: Fail,
    unstarted: list[weakref.finalize[Any, Any]],
) -> Any:
    # Started: from here the call ends below (a stream's observer may own it after
    # ``settle``), not when this coroutine is collected.
    for finalizer in unstarted:
        finalizer.detach()
    call.activate()
    try:
        result = await inner
    except BaseException as exc:
        call.deactivate()
        fail(exc)
        raise
    call.deactivate()
    await settle(result)
    return result


def _dropped(runtime: Runtime, call: ModelCallTelemetry) -> None:
    """The coroutine was collected before it started: end its span with the request
    only."""
    with runtime.guard:
        call.abandon()
