"""Tool names in rules checked against the file's ``tools:`` section.

A rule that names a tool no agent has (``refund_api.creat``) never finds a call: a
``required_steps`` rule then fails every run, but a ``max_calls``, ``approval``,
``state`` or ``identity_scope`` rule passes every run without ever looking at the real
tool. That is a silent pass, so when the file declares its tools, naming an undeclared
one is a load error with the rule's path and the closest declared name.

Where each check type names tools is part of its declaration (``CheckSpec.tool_fields``
and ``CheckSpec.forbids_tools``, forms ``field``, ``field[]``, ``field{}``, ``field{}[]``,
``list[].field``), so a new check type is validated without touching this module.

Two exceptions, both deliberate:

- places that *forbid* a tool (``forbids_tools``: ``forbidden_steps.tools``,
  ``tool_access.deny``) may name tools that are not declared: the agent is not supposed
  to have them. A name there that is one typo away from a declared tool is still
  reported, as a warning.
- a file without ``tools:`` has nothing to check against. Its rules load, and the rule
  set carries one warning saying that tool names were not checked (``tracejudge rules
  check`` prints it), so a typo is at least one declaration away from being caught.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from tracejudge.engine.checks import SPECS


def _names_at(node: Any, spec: str, path: str) -> Iterator[tuple[str, str]]:
    """``(path, name)`` for every tool name ``spec`` points at under ``node``."""
    if not isinstance(node, dict):
        return
    if "[]." in spec:
        field, rest = spec.split("[].", 1)
        items = node.get(field)
        if isinstance(items, list):
            for k, item in enumerate(items):
                yield from _names_at(item, rest, f"{path}.{field}[{k}]")
        return
    if "." in spec:
        field, rest = spec.split(".", 1)
        yield from _names_at(node.get(field), rest, f"{path}.{field}")
        return
    if spec.endswith("{}[]"):
        field = spec[:-4]
        value = node.get(field)
        if isinstance(value, dict):
            for key, names in value.items():
                if isinstance(names, list):
                    for k, name in enumerate(names):
                        yield f"{path}.{field}.{key}[{k}]", str(name)
        return
    if spec.endswith("{}"):
        field = spec[:-2]
        value = node.get(field)
        if isinstance(value, dict):
            for key in value:
                yield f"{path}.{field}", str(key)
        return
    if spec.endswith("[]"):
        field = spec[:-2]
        value = node.get(field)
        if isinstance(value, list):
            for k, name in enumerate(value):
                yield f"{path}.{field}[{k}]", str(name)
        return
    value = node.get(spec)
    if isinstance(value, str):
        yield f"{path}.{spec}", value


def _fields(check_type: str, forbidden: bool) -> tuple[str, ...]:
    """Where a check type names tools, from its declaration (``CheckSpec.tool_fields``)."""
    spec = SPECS.get(check_type)
    if spec is None:
        return ()
    return spec.forbids_tools if forbidden else spec.tool_fields


def _uses(doc: dict[str, Any], forbidden: bool) -> Iterator[tuple[str, str]]:
    """``(path, name)`` for each tool name the rules use (``forbidden``: those they forbid)."""
    for k, rule in enumerate(doc.get("rules") or []):
        if not isinstance(rule, dict):
            continue
        at = f"rules[{k}]"
        if not forbidden:
            select = rule.get("select")
            if isinstance(select, dict):
                yield from _names_at(select, "tools_present[]", f"{at}.select")
        check = rule.get("check")
        if isinstance(check, dict):
            for field in _fields(str(check.get("type")), forbidden):
                yield from _names_at(check, field, f"{at}.check")


def _hint(name: str, declared: list[str]) -> str:
    close = difflib.get_close_matches(name, declared, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_tool_names(doc: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``(errors, warnings)`` about tool names in a schema-valid rules document."""
    spec = doc.get("tools")
    if not spec:
        named = sorted({name for _, name in _uses(doc, False)})
        if not named:
            return [], []
        shown = ", ".join(repr(n) for n in named[:5]) + (" ..." if len(named) > 5 else "")
        return [], [
            f"tools: not declared, so the tool names rules use are not checked ({shown}); "
            "declare them under `tools:` to catch a misspelt name at load time"
        ]
    declared = sorted(str(n) for n in spec)
    known = set(declared)
    errors = [
        f"{path}: {name!r} is not declared in tools{_hint(name, declared)}"
        for path, name in _uses(doc, False)
        if name not in known
    ]
    warnings = []
    for path, name in _uses(doc, True):
        hint = _hint(name, declared)
        if name not in known and hint:
            warnings.append(f"{path}: {name!r} is not declared in tools{hint}")
    return errors, warnings
