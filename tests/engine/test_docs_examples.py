"""Every YAML example in the rules guide (docs/rules.md) and the check reference
(docs/checks.md) is a valid rules file (or rule fragment)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.engine.engine_runs import REFUND_TOOLS
from tracejudge.engine import load_rules_text

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCKS = [
    block
    for page in ("rules.md", "checks.md")
    for block in re.findall(r"```yaml\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), re.S)
]


def _as_rules(block: str) -> str:
    doc: Any = yaml.safe_load(block)
    assert isinstance(doc, dict)
    if "rules" in doc:
        return block
    rule: dict[str, Any] = {"id": "example", "layer": "trajectory"}
    rule["check"] = doc.get("check", {"type": "no_loop"})
    if "select" in doc:
        rule["select"] = doc["select"]
    return json.dumps({"version": 1, "tools": REFUND_TOOLS, "rules": [rule]})


def test_there_are_examples() -> None:
    """Guards the extraction itself: the reference has an example per check type."""
    assert len(BLOCKS) >= 20


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_example_loads(block: str) -> None:
    """A rule reference whose examples don't load teaches people to write broken files."""
    ruleset = load_rules_text(_as_rules(block), source="docs/rules.md or docs/checks.md")
    assert ruleset.rules
