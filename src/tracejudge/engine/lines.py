"""Where a rules-file path (``rules[3].check.properties``) sits in the YAML text: its line.

The loader reports problems by path; for the checks whose mistakes people make by hand
in long blocks (graders' rubrics) the line is added, found by composing the YAML text
again only when such an error exists.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

import yaml

_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parts(path: str) -> list[str | int]:
    return [int(i) if i else name for name, i in _PART.findall(path)]


def line_of(root: yaml.Node, path: str) -> int | None:
    """The 1-based line of the deepest node of ``path`` found under ``root``."""
    node: yaml.Node | None = root
    line = None
    for part in _parts(path):
        nxt: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            nxt = node.value[part] if part < len(node.value) else None
        if nxt is None:
            break
        node = nxt
        line = node.start_mark.line + 1
    return line


def with_lines(text: str, errors: list[str], rule_indexes: Collection[int]) -> list[str]:
    """``errors`` (``path: message``), those under ``rules[k]`` for ``k`` in
    ``rule_indexes`` prefixed with ``line N: ``; the others unchanged."""
    wanted = tuple(f"rules[{k}]" for k in rule_indexes)
    if not any(e.startswith(wanted) for e in errors):
        return errors
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError:
        return errors
    if root is None:
        return errors
    out = []
    for e in errors:
        path = e.split(":", 1)[0]
        line = line_of(root, path) if e.startswith(wanted) else None
        out.append(f"line {line}: {e}" if line is not None else e)
    return out


def grader_rules(doc: Any) -> list[int]:
    """Indexes of the rules whose check is a grader (in a parsed, maybe invalid, document)."""
    rules = doc.get("rules") if isinstance(doc, dict) else None
    if not isinstance(rules, list):
        return []
    return [
        k
        for k, r in enumerate(rules)
        if isinstance(r, dict)
        and isinstance(r.get("check"), dict)
        and r["check"].get("type") == "grader"
    ]
