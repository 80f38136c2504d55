"""Functions of ours that CEL expressions may call: reading times written in tool results,
and pairing lists by position (``indices``).

CEL's ``timestamp()`` takes RFC 3339 only, with a zone. Tool results say
``"2024-05-14T09:52:38"`` (no zone), ``"2024-05-14 09:52:38"`` or ``"2024-05-14"``, and
policies say "within 24 hours of booking". ``iso_timestamp`` reads those into CEL
timestamps, so durations compare with CEL's own arithmetic:

    timestamp(t.start) - iso_timestamp(r.result.created_at) <= duration('24h')

Both functions are pure (no clock, no I/O) and raise on bad input, which CEL turns into
an evaluation error: the rule reports ``F-EVIDENCE-CEL_ERROR``, never a silent pass.
"""

from __future__ import annotations

import datetime
import functools
import zoneinfo
from typing import Any

_UTC = datetime.UTC
MAX_TEXT = 64
"""Longer strings are not times; refusing them bounds the parser's work."""


@functools.lru_cache(maxsize=64)
def _zone(name: str) -> datetime.tzinfo:
    """An IANA zone (``America/New_York``) or a fixed offset (``-05:00``, ``Z``, ``UTC``)."""
    if name in ("Z", "UTC", "utc", "z"):
        return _UTC
    if name[:1] in "+-":
        parsed = datetime.datetime.fromisoformat(f"2000-01-01T00:00:00{name}")
        if parsed.tzinfo is None:  # pragma: no cover - fromisoformat always sets one here
            raise ValueError(f"bad offset {name!r}")
        return parsed.tzinfo
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}") from exc


def iso_timestamp(text: str, zone: str = "UTC") -> datetime.datetime:
    """An ISO-8601 date or date-time; one without a zone is read in ``zone`` (UTC)."""
    if len(text) > MAX_TEXT:
        raise ValueError(f"not an ISO-8601 time: {len(text)} characters")
    try:
        parsed = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"not an ISO-8601 time: {text!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_zone(zone))
    return parsed


MAX_INDICES = 10_000
"""A list longer than CEL's whole iteration budget could not be walked anyway."""


def indices(items: list[Any]) -> list[int]:
    """``[0, 1, ..., size - 1]``: pairs two lists by position, which CEL's one-variable
    macros cannot do ("each item can be exchanged for an item of the same product":
    ``indices(t.args.item_ids).all(k, t.args.item_ids[k] != t.args.new_item_ids[k])``)."""
    if len(items) > MAX_INDICES:
        raise ValueError(f"indices(): a list of {len(items)} items, more than {MAX_INDICES}")
    return list(range(len(items)))


def declarations() -> list[Any]:
    """The ``cel.FunctionDecl`` list for ``cel.NewEnv`` (imported lazily with CEL)."""
    from cel_expr_python import cel  # type: ignore[import-untyped]

    stamp, text = cel.Type.TIMESTAMP, cel.Type.STRING
    return [
        cel.FunctionDecl(
            "iso_timestamp",
            [
                cel.Overload("iso_timestamp_string", stamp, [text], impl=iso_timestamp),
                cel.Overload(
                    "iso_timestamp_string_string", stamp, [text, text], impl=iso_timestamp
                ),
            ],
        ),
        cel.FunctionDecl(
            "indices",
            [
                cel.Overload(
                    "indices_list",
                    cel.Type.List(cel.Type.INT),
                    [cel.Type.List(cel.Type.DYN)],
                    impl=indices,
                )
            ],
        ),
    ]


def rfc3339(ns: int) -> str | None:
    """Nanoseconds since the epoch as RFC 3339 UTC (what CEL's ``timestamp()`` reads);
    None for 0 (no time recorded)."""
    if ns <= 0:
        return None
    seconds, frac = divmod(ns, 1_000_000_000)
    day = datetime.datetime.fromtimestamp(seconds, _UTC)
    return f"{day:%Y-%m-%dT%H:%M:%S}.{frac:09d}Z"
