"""Values a change keeps, found when the call and the lookup name them by different paths.

``modify_user_address(address1=...)`` changes what ``get_user_details`` returned as
``address.address1``: the same leaf under a path whose key segments are a suffix of the
other's. A value is kept only when every leaf so related holds that same value; two
related leaves with different values (``address.address1`` and ``billing.address1``) are
ambiguous, and an ambiguous value is not waived. A leaf with the same name elsewhere
(``items[*].name`` for ``name``) is never related unless its path ends in the call's.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jmespath

from tracejudge.engine.checks.binding import flatten, key_of

Keys = tuple[str, ...]

_STEPS = frozenset(
    {"subexpression", "index_expression", "projection", "flatten", "index", "identity", "current"}
)
"""Nodes that only walk: their key path is their children's, list steps adding nothing."""


def _keys(node: dict[str, Any]) -> Keys | None:
    kind = node["type"]
    kids: list[dict[str, Any]] = node.get("children", [])
    if kind == "field":
        return (str(node["value"]),)
    if kind in _STEPS:
        out: list[str] = []
        for kid in kids:
            part = _keys(kid)
            if part is None:
                return None
            out.extend(part)
        return tuple(out)
    return None  # filters, functions, multi-selects...: no single key path


@lru_cache(maxsize=512)
def key_path(source: str) -> Keys | None:
    """The key segments of a plain path (``flights[*].date`` -> ``("flights", "date")``),
    list steps dropped; None for a path with filters, functions or selections."""
    try:
        parsed: dict[str, Any] = dict(jmespath.compile(source).parsed)
    except jmespath.exceptions.JMESPathError:
        return None
    return _keys(parsed)


def keyed_leaves(value: Any, keys: Keys) -> list[tuple[Keys, Any]]:
    """The scalars of ``value`` with their key paths below ``keys`` (list steps dropped),
    in the order ``conversation._leaves`` gives them."""
    out: list[tuple[Keys, Any]] = []
    for v in flatten(value):
        if isinstance(v, dict):
            for k, inner in v.items():
                out.extend(keyed_leaves(inner, (*keys, str(k))))
        else:
            out.append((keys, v))
    return out


def _related(a: Keys, b: Keys) -> bool:
    """One key path ends with the whole of the other (same leaf name, nesting aside)."""
    if not a or not b:
        return False
    n = min(len(a), len(b))
    return a[-n:] == b[-n:]


def kept_elsewhere(keys: Keys, value: Any, states: list[Any]) -> bool:
    """Whether the lookups' ``states`` hold ``value`` at the leaf ``keys`` names, nesting
    aside: some related leaf exists and every related leaf holds the same value."""
    if not keys:
        return False
    found: set[str] = set()
    for state in states:
        for where, v in keyed_leaves(state, ()):
            if _related(keys, where):
                found.add(key_of(v))
                if len(found) > 1:
                    return False  # two candidates with different values: ambiguous
    return found == {key_of(value)}
