"""The evaluator seam: one small class per check type, built from its rules-file params."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tracejudge.engine.compile import Compiler
from tracejudge.engine.context import Report, RunContext, ToolMeta


class Check(Protocol):
    """Evaluates one rule's check against one run, writing findings into ``report``.

    Implementations precompile everything in their factory and keep ``evaluate`` to one
    pass over the run's steps where they can.
    """

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Judge ``ctx.run``; record failures and missing evidence in ``report``."""


Factory = Callable[[dict[str, Any], str, Compiler, dict[str, ToolMeta]], Check | None]
"""``(params, path, compiler, tools) -> Check`` (None after recording errors on ``compiler``)."""


@dataclass(slots=True, frozen=True)
class CheckSpec:
    """Everything the project says about one check type, declared once, next to its code.

    The rules-file JSON Schema, the tool-name validation of rules files and the failure-code
    reference (docs/failure-codes.md) are generated from or checked against these
    declarations, so adding a check is one declaration, not five hand-kept lists.
    """

    name: str
    """The ``check.type`` in rules files."""
    doc: str
    """One line: what the check asks of a run."""
    params: dict[str, Any]
    """JSON Schema of the check object (``type`` included as ``true``)."""
    factory: Factory
    codes: tuple[str, ...]
    """Every finding code the check can emit (``F-EVIDENCE-*`` included)."""
    tool_fields: tuple[str, ...] = ()
    """Where the params name tools: ``field`` (a name), ``field[]`` (a list), ``field{}``
    (a map keyed by name), ``field{}[]`` (a map of lists), ``list[].field`` (each item's)."""
    forbids_tools: tuple[str, ...] = ()
    """Fields (same forms) that name tools the agent must *not* have: unknown names there
    are allowed (near-misses of declared tools warn)."""


def ref(name: str) -> dict[str, Any]:
    """A reference to a shared definition of the rules schema (``name``, ``names``,
    ``nameOrNames``, ``regex``, ``cel``, ``path``, ``posint``, ``posnum``, ``kind``,
    ``argMode``; see ``tracejudge.engine.ruleschema.BASE``)."""
    return {"$ref": f"#/$defs/{name}"}


def check_params(
    properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any
) -> dict[str, Any]:
    """The JSON Schema of a check object: ``type`` plus ``properties`` and nothing else.

    ``extra`` adds object-level keywords (``anyOf``, ``minProperties``...). Every check
    object has the same frame, so declarations state only what differs.
    """
    return {
        "type": "object",
        "required": ["type", *required],
        "additionalProperties": False,
        "properties": {"type": True, **properties},
        **extra,
    }


def names(value: Any) -> frozenset[str]:
    """A name or a list of names as a set."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset((value,))
    return frozenset(str(v) for v in value)


def short(value: Any, limit: int = 60) -> str:
    """``repr`` cut to ``limit`` characters, for explanations."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


ATTEMPTS: dict[str, Any] = {"enum": ["all", "successful"]}
"""The ``attempts`` parameter: judge every call (``all``) or only successful ones."""


def successful_only(p: dict[str, Any], default: str = "all") -> bool:
    """Whether a check's params say ``attempts: successful`` (``default`` when absent)."""
    return bool(p.get("attempts", default) == "successful")
