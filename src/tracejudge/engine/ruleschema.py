"""The rules-file JSON Schema, generated from the check declarations.

The schema has two parts: the shared top level written here (``BASE``: file layout, rule
frame, selectors and the ``$defs`` every check refers to: ``name``, ``path``, ``regex``...)
and one ``c_<type>`` definition per check type, taken from its ``CheckSpec.params``
(``tracejudge.engine.checks.SPECS``). The loader validates against ``build()`` directly, so
a declared check is always accepted; the copy shipped in the package
(``schema/rules.schema.json``, for editors and CI users) is written by this module, and
``--check`` fails when it is stale (``make rules-schema-check``, part of ``make test``),
the way ``semconv/generate.py`` keeps ``semconv.py`` honest.

Usage: ``python scripts/gen_rules_schema.py [--check]`` (``make rules-schema``).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracejudge.engine.checks import SPECS, CheckSpec

OUTPUT = Path(__file__).resolve().parent / "schema" / "rules.schema.json"

_KINDS = ["lookup", "mutate", "notify", "approval"]

BASE: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://tracejudge.invalid/schema/rules.schema.json",
    "title": "tracejudge rules file",
    "description": "Rules that judge agent runs. See docs/rules.md. "
    "Generated from the check declarations by scripts/gen_rules_schema.py: do not edit.",
    "type": "object",
    "required": ["version", "rules"],
    "additionalProperties": False,
    "properties": {
        "version": {"type": "integer", "enum": [1]},
        "prices": {
            "type": "object",
            "maxProperties": 1000,
            "additionalProperties": {
                "type": "object",
                "required": ["input", "output"],
                "additionalProperties": False,
                "properties": {
                    "input": {"type": "number", "minimum": 0},
                    "output": {"type": "number", "minimum": 0},
                },
            },
        },
        "tools": {
            "type": "object",
            "maxProperties": 1000,
            "additionalProperties": {
                "type": "object",
                "required": ["kind"],
                "additionalProperties": False,
                "properties": {
                    "kind": {"enum": _KINDS},
                    "entities": {"$ref": "#/$defs/path"},
                    "idempotency_argument": {"type": "string", "minLength": 1, "maxLength": 200},
                    "category": {"type": "string", "minLength": 1, "maxLength": 200},
                },
            },
        },
        "rules": {"type": "array", "maxItems": 1000, "items": {"$ref": "#/$defs/rule"}},
    },
    "$defs": {
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "names": {
            "type": "array",
            "items": {"$ref": "#/$defs/name"},
            "minItems": 1,
            "maxItems": 1000,
        },
        "nameOrNames": {"oneOf": [{"$ref": "#/$defs/name"}, {"$ref": "#/$defs/names"}]},
        "regex": {"type": "string", "minLength": 1, "maxLength": 1000},
        "cel": {"type": "string", "minLength": 1, "maxLength": 2000},
        "path": {"type": "string", "minLength": 1, "maxLength": 500},
        "posint": {"type": "integer", "minimum": 0},
        "posnum": {"type": "number", "minimum": 0},
        "kind": {"enum": _KINDS},
        "argMode": {"enum": ["exact", "ignore", "subset"]},
        "rule": {
            "type": "object",
            "required": ["id", "layer", "check"],
            "additionalProperties": False,
            "properties": {
                "id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"},
                "layer": {"enum": ["outcome", "trajectory", "policy", "budget"]},
                "severity": {"enum": ["fail", "warn"], "default": "fail"},
                "description": {"type": "string", "maxLength": 2000},
                "select": {"$ref": "#/$defs/select"},
                "check": {"$ref": "#/$defs/check"},
            },
        },
        "select": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "agent": {"$ref": "#/$defs/nameOrNames"},
                "case": {"$ref": "#/$defs/nameOrNames"},
                "tools_present": {"$ref": "#/$defs/names"},
                "attributes": {
                    "type": "object",
                    "maxProperties": 50,
                    "additionalProperties": {"type": ["string", "number", "boolean"]},
                },
                "attributes_match": {
                    "type": "object",
                    "maxProperties": 50,
                    "additionalProperties": {"$ref": "#/$defs/regex"},
                },
            },
        },
    },
}
"""The shared part of the schema; ``build`` adds ``$defs.check`` and one ``c_*`` per type."""


def build(specs: Iterable[CheckSpec] | None = None) -> dict[str, Any]:
    """The complete rules schema for ``specs`` (default: every declared check type)."""
    chosen = list(SPECS.values() if specs is None else specs)
    doc = copy.deepcopy(BASE)
    defs: dict[str, Any] = doc["$defs"]
    defs["check"] = {
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"enum": [s.name for s in chosen]}},
        "allOf": [
            {
                "if": {"properties": {"type": {"const": s.name}}},
                "then": {"$ref": f"#/$defs/c_{s.name}"},
            }
            for s in chosen
        ],
    }
    for s in chosen:
        if f"c_{s.name}" in defs:
            raise ValueError(f"check type {s.name!r} collides with a shared definition")
        defs[f"c_{s.name}"] = {"description": s.doc, **copy.deepcopy(s.params)}
    return doc


_WIDTH = 100


def _fmt(value: Any, indent: int, lead: int = 0) -> str:
    """JSON with a node on one line when it fits in ``_WIDTH`` (``lead``: the characters
    before it on its line after the indent), else one member per line."""
    flat = json.dumps(value, ensure_ascii=False)
    if indent + lead + len(flat) <= _WIDTH or not isinstance(value, (dict, list)) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            key = json.dumps(k, ensure_ascii=False) + ": "
            items.append(pad + key + _fmt(v, indent + 2, len(key)))
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + _fmt(v, indent + 2) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def render(doc: dict[str, Any]) -> str:
    """The schema as the shipped file's text: stable (declaration order), compact enough
    to read, one node per line where it does not fit in 100 columns."""
    return _fmt(doc, 0) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the shipped schema, or with ``--check`` fail (1) when it is stale."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the shipped copy is stale")
    args = parser.parse_args(argv)
    text = render(build())
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(
                f"rules schema: {OUTPUT} is stale; run `make rules-schema`",
                file=sys.stderr,
            )
            return 1
        print("rules schema: shipped copy is up to date", file=sys.stderr)
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"rules schema: wrote {OUTPUT}", file=sys.stderr)
    return 0
