"""Rule evaluators, one module per layer, and the registry of check types.

Each check module declares its check types once, next to their code, as
``SPECS: tuple[CheckSpec, ...]`` (name, one-line doc, params JSON Schema, factory, the
codes it can emit, the fields that name tools). This package collects them:

- ``SPECS`` maps ``check.type`` to its ``CheckSpec``; ``FACTORIES`` maps it to the builder.
- the rules JSON Schema is generated from ``SPECS`` (``tracejudge.engine.ruleschema``),
- tool-name validation reads ``tool_fields``/``forbids_tools`` (``tracejudge.engine.toolrefs``),
- the tests hold ``codes`` against docs/failure-codes.md and against the code literals.

Adding a check type: declare its ``CheckSpec`` in its module's ``SPECS`` (a new module
also goes into ``_MODULES`` below), document its codes in docs/failure-codes.md, then
regenerate the shipped schema with ``python -m tracejudge.engine.ruleschema``.
"""

from __future__ import annotations

import re

from tracejudge.engine.checks import (
    baseline,
    binding,
    budget,
    case,
    claims,
    conversation,
    custom,
    grader,
    outcome,
    policy,
    trajectory,
)
from tracejudge.engine.checks.base import Check, CheckSpec, Factory

_MODULES = (
    trajectory,
    binding,
    policy,
    outcome,
    claims,
    budget,
    custom,
    baseline,
    case,
    conversation,
    grader,
)
"""Declaring modules, in the order their check types appear in the schema."""

CODE_PATTERN = re.compile(r"F-[A-Z]+(?:-[A-Z_]+)+")
"""What a finding code looks like: ``F-<FAMILY>-[<AREA>-]<WHAT>``."""
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_FIELD = re.compile(r"[a-z_]+(?:(?:\[\])?\.[a-z_]+)*(?:\[\]|\{\}|\{\}\[\])?")


def _validate(spec: CheckSpec) -> None:
    """A malformed declaration fails at import, naming the check, not at some later load."""
    problems: list[str] = []
    if not _NAME.fullmatch(spec.name):
        problems.append("name must be lower_snake_case")
    p = spec.params
    props = p.get("properties")
    required = p.get("required")
    if not (
        p.get("type") == "object"
        and isinstance(props, dict)
        and props.get("type") is True
        and isinstance(required, list)
        and "type" in required
        and p.get("additionalProperties") is False
    ):
        problems.append("params must be a closed object schema with `type` (use check_params)")
    if not spec.codes:
        problems.append("declares no codes")
    problems.extend(f"bad code {c!r}" for c in spec.codes if not CODE_PATTERN.fullmatch(c))
    for field in (*spec.tool_fields, *spec.forbids_tools):
        top = field.split(".", 1)[0].split("[", 1)[0].split("{", 1)[0]
        if not _FIELD.fullmatch(field) or not isinstance(props, dict) or top not in props:
            problems.append(f"tool field {field!r} is not a parameter")
    if not spec.doc or "\n" in spec.doc:
        problems.append("doc must be one line")
    if problems:
        raise ValueError(f"check type {spec.name!r}: " + "; ".join(problems))


def _registry() -> dict[str, CheckSpec]:
    out: dict[str, CheckSpec] = {}
    for module in _MODULES:
        for spec in module.SPECS:
            if spec.name in out:
                raise ValueError(f"check type {spec.name!r} is declared twice")
            _validate(spec)
            out[spec.name] = spec
    return out


SPECS: dict[str, CheckSpec] = _registry()
"""Every check type by ``check.type``, in schema order."""

FACTORIES: dict[str, Factory] = {name: spec.factory for name, spec in SPECS.items()}
"""``check.type`` -> the builder of its evaluator."""


def declared_codes() -> frozenset[str]:
    """Every finding code some check type declares."""
    return frozenset(code for spec in SPECS.values() for code in spec.codes)


__all__ = [
    "CODE_PATTERN",
    "FACTORIES",
    "SPECS",
    "Check",
    "CheckSpec",
    "Factory",
    "declared_codes",
]
