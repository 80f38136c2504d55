"""Reading SDK objects: the accessors every provider's translation code shares.

Why one module: request bodies arrive as dicts (typed dicts, user-built), responses as
SDK models (pydantic), and users mix the two (passing a response's content back as
history); every translation reads through ``get``. The server address, the tool-call
argument parsing and the raw-response mode are the same for every Stainless-generated
SDK (openai, anthropic), so they are written once here rather than per provider with
drifting defaults.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

RAW_RESPONSE_HEADER: Final = "X-Stainless-Raw-Response"
"""Header the Stainless SDKs set on ``with_raw_response`` ("true"/"raw") and
``with_streaming_response`` ("stream") calls; it tells a wrapper what ``create`` returns."""

RAW_STREAMING: Final = "stream"
"""The raw mode whose HTTP body is still unread (``with_streaming_response``)."""


def get(value: Any, key: str, default: Any = None) -> Any:
    """``value[key]`` for a mapping, ``value.key`` for an object, ``default`` when absent.

    Never raises: a broken property on an SDK object reads as absent.
    """
    cls = type(value)
    if cls is dict:  # exact-type check: the cheapest test on the hot path
        return value.get(key, default)
    if value is None:
        return default
    mapping = _IS_MAPPING.get(cls)
    if mapping is None:
        mapping = _is_mapping(value)
    if mapping:
        return value.get(key, default)
    try:
        return getattr(value, key, default)
    except Exception:  # a broken property must not break the call
        return default


_IS_MAPPING: dict[type, bool] = {}
"""Per type: whether its values are ``Mapping``s. Why: ``isinstance(value, Mapping)`` is an
ABC check (a Python-level ``__instancecheck__``) and ``get`` reads SDK models ~50 times per
call; a dict lookup by type is several times cheaper."""

_IS_MAPPING_TYPES: Final = 512
"""Types remembered (an SDK has a few hundred model classes; beyond it, checked each time)."""


def _is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, remembered for ``type(value)`` when the answer is the
    type's (not for an object whose ``__class__`` claims another type)."""
    mapping = isinstance(value, Mapping)
    cls = type(value)
    if len(_IS_MAPPING) < _IS_MAPPING_TYPES and getattr(value, "__class__", None) is cls:
        _IS_MAPPING[cls] = mapping
    return mapping


def parse_arguments(raw: Any) -> Any:
    """The model's tool-call arguments as JSON data when they parse, else the raw text."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def server_of(resource: Any) -> tuple[str | None, int | None]:
    """``server.address``/``server.port`` from an SDK resource's client ``base_url``.

    The port is the URL's, else the scheme's default (80 for http, 443 otherwise), as the
    conventions want a port whenever an address is recorded.
    """
    url = getattr(getattr(resource, "_client", None), "base_url", None)
    host = getattr(url, "host", None)
    if not isinstance(host, str) or not host:
        return None, None
    port = getattr(url, "port", None)
    if not isinstance(port, int):
        port = 80 if getattr(url, "scheme", "https") == "http" else 443
    return host, port


def url_server(url: Any) -> tuple[str | None, int | None]:
    """``server.address``/``server.port`` of a base URL given as a string (the SDKs that
    keep one: google-genai, botocore, mistralai, cohere); the port is the URL's, else the
    scheme's default. ``(None, None)`` for anything that is not such a URL."""
    if not isinstance(url, str) or not url:
        return None, None
    return _url_server(url)


@functools.lru_cache(maxsize=64)
def _url_server(url: str) -> tuple[str | None, int | None]:
    """``url_server`` of a string, remembered: a client's base URL is the same on every
    call and ``urlsplit`` was a twentieth of a Gemini call's telemetry."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None, None
    if not parts.hostname:
        return None, None
    return parts.hostname, port if port is not None else (80 if parts.scheme == "http" else 443)


def raw_mode(kwargs: Mapping[str, Any]) -> str | None:
    """The raw-response mode of a call (see ``RAW_RESPONSE_HEADER``), or None."""
    headers = kwargs.get("extra_headers")
    if not headers or not isinstance(headers, Mapping):
        return None
    value = headers.get(RAW_RESPONSE_HEADER)
    return value if isinstance(value, str) else None
