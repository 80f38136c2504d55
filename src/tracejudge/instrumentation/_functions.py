"""Module-level SDK functions wrapped like methods (``ProviderSpec.functions``).

Why: the provider template's wrappers take the SDK resource as their first argument
(``self``) and read the request from keywords. LiteLLM's entry points are functions
(``litellm.completion(model, messages, ...)``), often called with positional arguments.
``as_function`` puts a function behind a method-shaped wrapper with no resource and
passes positional arguments on as the keywords they bind to, so the one wrapper (and its
duplicate-span check, guard and stream observer) serves functions too.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Final

_NAMED: Final = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def as_function(
    original: Callable[..., Any],
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]],
    *,
    is_async: bool,
    like: Callable[..., Any] | None = None,
) -> Callable[..., Any]:
    """``original`` behind ``wrap`` (a method wrapper factory): the method gets None as
    its resource, and positional arguments as keywords (``as_keywords``). ``like``: the
    function whose parameters ``original``'s are when ``original`` names none
    (LiteLLM's ``aembedding(*args, **kwargs)`` passes them on to ``embedding``)."""
    signature = _signature(original)
    if like is not None and not _names_parameters(signature):
        signature = _signature(like)

    def method(resource: Any, *args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs)

    wrapped = wrap(method)
    if is_async:

        @functools.wraps(original)
        async def async_function(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = as_keywords(signature, args, kwargs)
            return await wrapped(None, *args, **kwargs)

        return async_function

    @functools.wraps(original)
    def function(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = as_keywords(signature, args, kwargs)
        return wrapped(None, *args, **kwargs)

    return function


def _signature(function: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None


def _names_parameters(signature: inspect.Signature | None) -> bool:
    return signature is not None and any(p.kind in _NAMED for p in signature.parameters.values())


def as_keywords(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` with the positional arguments moved to the keywords they bind
    to; unchanged when there are none, or they bind to no name (``*args``, positional-only
    parameters) or not at all (the function then raises its own ``TypeError``)."""
    if not args or signature is None:
        return args, kwargs
    try:
        bound = signature.bind_partial(*args, **kwargs)
    except TypeError:
        return args, kwargs
    out: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif kind in _NAMED:
            out[name] = value
        else:
            return args, kwargs
    return (), out
