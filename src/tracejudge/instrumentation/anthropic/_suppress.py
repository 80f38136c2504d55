"""Exactly one span per Anthropic call: switching the SDK's own span off under ours.

Why: since 2.x the anthropic SDK starts its own CLIENT span for every API call
(``anthropic.messages.create``, instrumentation scope ``com.anthropic.sdk.python``),
enabled by default and sent to the *global* tracer provider — the one ``instrument()``
installs when the application has none. Left alone, every traced call would show up
twice. We considered enriching the SDK's span instead of creating ours, and rejected
it: its name is not ``chat {model}``, it records a newer usage name
(``cache_write``) than our pinned conventions, it lacks the request parameters and
finish reasons, it does not exist on 0.x/1.x or when the user disables it
(``ANTHROPIC_OPEN_TELEMETRY=false``), and it may go to a different provider than ours.

So our span is the one span: while a traced call is in flight (a context variable, so
threads and asyncio tasks are independent) the SDK's ``start_api_call_span`` — the one
function both its sync and async clients call to open that span — returns ``None``,
which the SDK treats as "no span" and sends the request unchanged. Calls we do not
trace (``count_tokens``, batches, beta) keep the SDK's span. On an SDK without the
function (older majors) there is nothing to switch off and nothing is patched.
"""

from __future__ import annotations

import functools
import importlib
from contextvars import ContextVar, Token
from typing import Any

_IN_CALL: ContextVar[bool] = ContextVar("tracejudge_anthropic_call", default=False)

_MODULE = "anthropic._base_client"
_FUNCTION = "start_api_call_span"
_MARK = "__tracejudge_suppressor__"


def suppress_sdk_span() -> Token[bool]:
    """Mark the current context as inside a traced call; pass the token to restore."""
    return _IN_CALL.set(True)


def restore_sdk_span(token: Token[bool]) -> None:
    """Undo ``suppress_sdk_span`` (tolerates a token from another context)."""
    try:
        _IN_CALL.reset(token)
    except ValueError:
        _IN_CALL.set(False)


class SdkSpanSuppressor:
    """Installs (and exactly removes) the guard on the SDK's span-starting function."""

    def __init__(self) -> None:
        self._original: Any = None
        self._module: Any = None

    @property
    def installed(self) -> bool:
        """Whether the SDK had its own tracing and the guard is in place."""
        return self._original is not None

    def install(self) -> bool:
        """Guard the SDK's span start; False when this SDK has no own tracing."""
        try:
            module = importlib.import_module(_MODULE)
        except ImportError:
            return False
        original = getattr(module, _FUNCTION, None)
        if original is None or not callable(original):
            return False
        if getattr(original, _MARK, False):
            return True  # already guarded (a second patcher instance)

        @functools.wraps(original)
        def start_api_call_span(*args: Any, **kwargs: Any) -> Any:
            if _IN_CALL.get():
                return None
            return original(*args, **kwargs)

        setattr(start_api_call_span, _MARK, True)
        setattr(module, _FUNCTION, start_api_call_span)
        self._module, self._original = module, original
        return True

    def uninstall(self) -> None:
        """Put the SDK's function back (no-op when nothing was installed)."""
        if self._module is not None and self._original is not None:
            setattr(self._module, _FUNCTION, self._original)
        self._module = self._original = None
