"""Outcome checks: do the identifiers and state the answer reports match the tools?

Claims (``claim_evidence``, ``completion_claims``) live in ``checks.claims``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracejudge.engine.checks.base import Check, CheckSpec, check_params, names, ref, short
from tracejudge.engine.compile import CelExpr, Compiler, Path, Regex
from tracejudge.engine.context import Report, RunContext, ToolMeta, canonical, ok


class IdentifierEvidence:
    """Identifiers the answer reports (regex captures) must appear in a successful tool result."""

    def __init__(self, pattern: Regex, tools: frozenset[str]) -> None:
        self.pattern = pattern
        self.tools = tools

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Join the relevant results once, then look each reported identifier up in them."""
        answer = ctx.run.final_answer
        if answer is None:
            report.insufficient(
                "F-EVIDENCE-NO_FINAL_ANSWER",
                ctx.root,
                "no final answer captured; cannot check its identifiers",
                ctx.final_index,
            )
            return
        texts: list[str] = []
        uncaptured = False
        for i, call in ctx.tool_index:
            if (self.tools and call.name not in self.tools) or not ok(call):
                continue
            text = ctx.result_text(i, call)
            if text is None:
                uncaptured = True
            else:
                texts.append(text)
        haystack = "\n".join(texts)
        for ident in self.pattern.captures(answer):
            if not ident or ident in haystack:
                continue
            if uncaptured:
                report.insufficient(
                    "F-EVIDENCE-RESULT_MISSING",
                    ctx.final_span(),
                    f"identifier {short(ident)} not found and some tool results were not captured",
                    ctx.final_index,
                )
                return
            report.fail(
                "F-OUTPUT-UNSUPPORTED_IDENTIFIER",
                ctx.final_span(),
                f"the answer reports {short(ident)} but no successful tool result contains it",
                ctx.final_index,
            )


@dataclass(slots=True, frozen=True)
class Expectation:
    """One expected state change: the value at ``path`` in the last successful result."""

    tool: str
    path: Path
    equals: Any = None
    has_equals: bool = False
    cel: CelExpr | None = None


class State:
    """Expected state changes, read from the results of the tools that made them.

    ``code`` is the failure code: the ``state`` check's, or the ``case`` check's when a
    case's ``expected_state`` is judged with the same machinery.
    """

    def __init__(self, expect: list[Expectation], code: str = "F-OUTPUT-STATE_MISMATCH") -> None:
        self.expect = expect
        self.code = code

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """The last successful call of each tool is the authoritative state."""
        for exp in self.expect:
            calls = [(i, c) for i, c in ctx.by_name.get(exp.tool, []) if ok(c)]
            if not calls:
                report.fail(
                    self.code,
                    ctx.root,
                    f"expected a state change from {exp.tool}, but it never succeeded",
                    ctx.final_index,
                    absent=True,
                )
                continue
            i, call = calls[-1]
            if call.result is None:
                report.insufficient(
                    "F-EVIDENCE-RESULT_MISSING",
                    (call.span_id,),
                    f"{exp.tool} result was not captured; cannot check state",
                    i,
                )
                continue
            value = exp.path.search(call.result)
            if exp.has_equals:
                if canonical(value) == canonical(exp.equals):
                    continue
                why = f"{exp.path.source}={short(value)}, expected {short(exp.equals)}"
            else:
                assert exp.cel is not None
                got, err = exp.cel.evaluate_value(value)
                if err is not None:
                    report.insufficient(
                        "F-EVIDENCE-CEL_ERROR",
                        (call.span_id,),
                        f"state predicate on {exp.tool} could not evaluate: {err}",
                        i,
                    )
                    continue
                if got is True:
                    continue
                why = f"{exp.path.source}={short(value)} fails {short(exp.cel.source)}"
            report.fail(self.code, (call.span_id,), f"{exp.tool}: {why}", i)


def build_identifier_evidence(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``identifier_evidence``."""
    rx = c.regex(f"{path}.pattern", p["pattern"])
    return None if rx is None else IdentifierEvidence(rx, names(p.get("tools")))


def build_state(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``state``."""
    out = compile_expectations(p["expect"], f"{path}.expect", c)
    return None if out is None else State(out)


def compile_expectations(
    items: list[dict[str, Any]], path: str, c: Compiler
) -> list[Expectation] | None:
    """``[{tool, path, equals | cel}]`` compiled (None after recording errors on ``c``);
    shared by the ``state`` check and cases' ``expected_state``."""
    out: list[Expectation] = []
    failed = False
    for k, e in enumerate(items):
        at = f"{path}[{k}]"
        jp = c.path(f"{at}.path", e["path"])
        expr = c.cel(f"{at}.cel", e["cel"]) if "cel" in e else None
        if jp is None or ("cel" in e and expr is None):
            failed = True
            continue
        out.append(Expectation(e["tool"], jp, e.get("equals"), "equals" in e, expr))
    return None if failed else out


SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="identifier_evidence",
        doc="Identifiers the final answer reports must appear in a successful tool result.",
        params=check_params({"pattern": ref("regex"), "tools": ref("names")}, ("pattern",)),
        factory=build_identifier_evidence,
        codes=(
            "F-OUTPUT-UNSUPPORTED_IDENTIFIER",
            "F-EVIDENCE-NO_FINAL_ANSWER",
            "F-EVIDENCE-RESULT_MISSING",
        ),
        tool_fields=("tools[]",),
    ),
    CheckSpec(
        name="state",
        doc="The last successful result of each tool must hold the expected values.",
        params=check_params(
            {
                "expect": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 100,
                    "items": {
                        "type": "object",
                        "required": ["tool", "path"],
                        "additionalProperties": False,
                        "properties": {
                            "tool": ref("name"),
                            "path": ref("path"),
                            "equals": {},
                            "cel": ref("cel"),
                        },
                        "oneOf": [{"required": ["equals"]}, {"required": ["cel"]}],
                    },
                }
            },
            ("expect",),
        ),
        factory=build_state,
        codes=("F-OUTPUT-STATE_MISMATCH", "F-EVIDENCE-RESULT_MISSING", "F-EVIDENCE-CEL_ERROR"),
        tool_fields=("expect[].tool",),
    ),
)
"""The outcome check types, declared once (see ``tracejudge.engine.checks``)."""
