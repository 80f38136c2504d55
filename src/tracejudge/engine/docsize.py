"""How big a parsed rules or cases document really is, aliases expanded.

YAML aliases can expand a small file exponentially ("billion laughs"); validation and
compilation walk the expanded tree, so both loaders bound it before either runs.
"""

from __future__ import annotations

from typing import Any


def expanded_size(doc: Any, limit: int) -> int:
    """Values in ``doc`` counting shared (aliased) subtrees each time; stops past ``limit``."""
    count = 0
    stack = [doc]
    while stack and count <= limit:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count
