"""Policy checks: was every action allowed (tools, approvals, arguments, data, identity)?"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from tracejudge.engine.checks.base import (
    ATTEMPTS,
    Check,
    CheckSpec,
    check_params,
    names,
    ref,
    short,
    successful_only,
)
from tracejudge.engine.checks.binding import flatten
from tracejudge.engine.compile import Compiler, Path, Regex
from tracejudge.engine.context import Report, RunContext, ToolMeta, canonical, ok
from tracejudge.model.run import ToolCall
from tracejudge.redaction import DETECTORS
from tracejudge.redaction import luhn_ok as luhn_ok


class ToolAccess:
    """Allowlist and/or denylist of tools (scope it to an agent with ``select.agent``)."""

    def __init__(
        self, allow: frozenset[str] | None, deny: frozenset[str], successful_only: bool = False
    ) -> None:
        self.allow = allow
        self.deny = deny
        self.successful_only = successful_only

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Flag every call (attempt) outside the allowlist or inside the denylist."""
        for i, call in ctx.tool_index:
            if self.successful_only and not ok(call):
                continue
            if call.name in self.deny:
                why = "is denied"
            elif self.allow is not None and call.name not in self.allow:
                why = "is not in the allowlist"
            else:
                continue
            agent = ctx.run.agent_name or "the agent"
            report.fail(
                "F-POLICY-UNAUTHORIZED_TOOL", (call.span_id,), f"{call.name} {why} for {agent}", i
            )


class Approval:
    """Given tools need ``approval_granted`` on the call or a prior successful approval step."""

    def __init__(
        self, tools: frozenset[str], approval_tools: frozenset[str], successful_only: bool = False
    ) -> None:
        self.tools = tools
        self.approval_tools = approval_tools
        self.successful_only = successful_only

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """One pass, remembering whether an approval step has succeeded so far."""
        approved = False
        for i, call in ctx.tool_index:
            is_approval = (
                call.name in self.approval_tools
                if self.approval_tools
                else ctx.kinds[i] == "approval"
            )
            if is_approval and ok(call) and _granted(call.result):
                approved = True
            if call.name not in self.tools or (self.successful_only and not ok(call)):
                continue
            if call.approval_granted is True:
                continue
            if call.approval_granted is False:
                why = "ran although approval was denied"
            elif approved:
                continue
            else:
                why = "ran without an approval"
            report.fail("F-POLICY-MISSING_APPROVAL", (call.span_id,), f"{call.name} {why}", i)


def _granted(result: Any) -> bool:
    """An approval step's result counts unless it explicitly says not approved."""
    if isinstance(result, dict):
        for key in ("approved", "granted", "approval_granted"):
            if key in result:
                return result[key] is True
    return True


class MaxCalls:
    """At most N calls of a tool."""

    def __init__(self, limits: dict[str, int], successful_only: bool = False) -> None:
        self.limits = limits
        self.successful_only = successful_only

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """The (N+1)-th call (attempt, or success with ``attempts: successful``) fails."""
        for name, limit in self.limits.items():
            calls = ctx.by_name.get(name, [])
            if self.successful_only:
                calls = [(i, c) for i, c in calls if ok(c)]
            if len(calls) > limit:
                i, call = calls[limit]
                report.fail(
                    "F-POLICY-MAX_CALLS",
                    (call.span_id,),
                    f"{name} called {len(calls)} times (at most {limit})",
                    i,
                )


class ForbiddenArguments:
    """A tool argument must not take given values or match a pattern."""

    def __init__(
        self,
        tool: str,
        argument: Path,
        values: list[Any] | None,
        pattern: Regex | None,
        successful_only: bool = False,
    ) -> None:
        self.successful_only = successful_only
        self.tool = tool
        self.argument = argument
        self.values = {canonical(v) for v in values} if values else set()
        self.pattern = pattern

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Check each call of the tool; unparsed arguments are insufficient evidence."""
        for i, call in ctx.by_name.get(self.tool, []):
            if self.successful_only and not ok(call):
                continue
            if call.arguments is None or not call.arguments_is_json:
                report.insufficient(
                    "F-EVIDENCE-ARGS_NOT_JSON",
                    (call.span_id,),
                    f"{call.name} arguments were not captured as JSON",
                    i,
                )
                continue
            for v in flatten(self.argument.search(call.arguments)):
                text = v if isinstance(v, str) else canonical(v)
                if canonical(v) in self.values or (self.pattern and self.pattern.test(text)):
                    report.fail(
                        "F-POLICY-FORBIDDEN_ARGUMENT",
                        (call.span_id,),
                        f"{call.name} {self.argument.source}={short(v)} is forbidden",
                        i,
                    )
                    break


@dataclass(slots=True, frozen=True)
class Detector:
    """A named pattern for secrets or personal data."""

    name: str
    category: str  # "secret" | "pii"
    regex: Regex
    luhn: bool = False


BUILTIN_DETECTORS = DETECTORS
"""The built-in detectors (shared with the instrumentation and the collector)."""


_SEP = "\n\x00\n"
"""Joins scanned texts; no detector can match across it."""


class SensitiveData:
    """Secrets and personal data in tool arguments, tool results or the final answer.

    All detectors are compiled into one RE2 alternation and every scanned text of the run
    is joined, so a run costs one regex pass per rule, linear in its size.
    """

    def __init__(
        self,
        detectors: list[Detector],
        combined: Regex,
        scan: frozenset[str],
        allow: dict[str, frozenset[str]],
    ) -> None:
        self.detectors = detectors
        self.combined = combined
        self.groups = [f"g{k}" for k in range(len(detectors))]
        self.scan = scan
        self.allow = allow

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Scan what was asked for; explanations name the detector, never the value."""
        # step, span, what was scanned, tool; the explanation is written only on a match
        segments: list[tuple[int, str, str, str | None]] = []
        texts: list[str] = []
        args, results = "arguments" in self.scan, "results" in self.scan
        for i, call in ctx.tool_index:
            if args:
                text = ctx.args_text(i, call)
                if text is not None:
                    texts.append(text)
                    segments.append((i, call.span_id, "arguments", call.name))
            if results:
                text = ctx.result_text(i, call)
                if text is not None:
                    texts.append(text)
                    segments.append((i, call.span_id, "result", call.name))
        if "final_answer" in self.scan:
            if ctx.run.final_answer is None:
                report.insufficient(
                    "F-EVIDENCE-NO_FINAL_ANSWER",
                    ctx.root,
                    "no final answer captured; cannot scan it",
                    ctx.final_index,
                )
            else:
                texts.append(ctx.run.final_answer)
                segments.append((ctx.final_index, ctx.final_span()[0], "final_answer", None))
        if not texts:
            return
        joined = _SEP.join(texts)
        if not self.combined.test(joined):
            return  # the common case: one RE2 pass, no match objects
        starts: list[int] = []
        pos = 0
        for text in texts:
            starts.append(pos)
            pos += len(text) + len(_SEP)
        seen: set[tuple[int, int]] = set()
        for m in self.combined.finditer(joined):
            k = next(k for k, g in enumerate(self.groups) if m.group(g) is not None)
            det = self.detectors[k]
            seg = bisect.bisect_right(starts, m.start()) - 1
            step, sid, what, tool = segments[seg]
            if (k, seg) in seen or (tool is not None and tool in self.allow.get(det.name, ())):
                continue
            if det.luhn and not luhn_ok(m.group(0)):
                continue
            seen.add((k, seg))
            code = (
                "F-POLICY-SECRET_EXPOSURE" if det.category == "secret" else "F-POLICY-PII_EXPOSURE"
            )
            # never echo the matched value: the explanation itself lands in the trace store
            where = "the final answer" if tool is None else f"{what} of {tool}"
            report.fail(code, (sid,), f"{det.name} found in {where} (value withheld)", step)


class IdentityScope:
    """An argument must equal the run's ``user_id``/``tenant_id``."""

    def __init__(
        self, tool: str, argument: Path, equals: str, successful_only: bool = False
    ) -> None:
        self.tool = tool
        self.argument = argument
        self.equals = equals
        self.successful_only = successful_only

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """Without the identity on the trace the answer is insufficient evidence."""
        calls = ctx.by_name.get(self.tool, [])
        if self.successful_only:
            calls = [(i, c) for i, c in calls if ok(c)]
        if not calls:
            return
        expected = getattr(ctx.run, self.equals)
        if expected is None:
            report.insufficient(
                "F-EVIDENCE-NO_IDENTITY",
                ctx.root,
                f"the trace carries no {self.equals}; cannot check {self.tool} scope",
                calls[0][0],
            )
            return
        for i, call in calls:
            self._one(report, i, call, expected)

    def _one(self, report: Report, i: int, call: ToolCall, expected: str) -> None:
        if call.arguments is None or not call.arguments_is_json:
            report.insufficient(
                "F-EVIDENCE-ARGS_NOT_JSON",
                (call.span_id,),
                f"{call.name} arguments were not captured as JSON",
                i,
            )
            return
        got = self.argument.search(call.arguments)
        if got is None or str(got) != expected:
            report.fail(
                "F-POLICY-IDENTITY_SCOPE",
                (call.span_id,),
                f"{call.name} {self.argument.source}={short(got)} is outside the run's "
                f"{self.equals} {short(expected)}",
                i,
            )


def build_tool_access(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``tool_access``."""
    allow = names(p["allow"]) if "allow" in p else None
    return ToolAccess(allow, names(p.get("deny")), successful_only(p))


def build_approval(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``approval``."""
    return Approval(names(p["tools"]), names(p.get("approval_tools")), successful_only(p))


def build_max_calls(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``max_calls``."""
    return MaxCalls({str(k): int(v) for k, v in p["limits"].items()}, successful_only(p))


def build_forbidden_arguments(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``forbidden_arguments``."""
    arg = c.path(f"{path}.argument", p["argument"])
    rx = c.regex(f"{path}.pattern", p["pattern"]) if "pattern" in p else None
    if arg is None or ("pattern" in p and rx is None):
        return None
    return ForbiddenArguments(p["tool"], arg, p.get("values"), rx, successful_only(p))


def build_sensitive_data(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``sensitive_data``."""
    dets: list[Detector] = []
    for name in p.get("detectors", list(BUILTIN_DETECTORS)):
        category, pattern = BUILTIN_DETECTORS[name]
        rx = c.regex(f"{path}.detectors", pattern)
        if rx is not None:
            dets.append(Detector(name, category, rx, luhn=name == "card_number"))
    for k, custom in enumerate(p.get("custom", [])):
        rx = c.regex(f"{path}.custom[{k}].pattern", custom["pattern"])
        if rx is not None:
            dets.append(Detector(custom["name"], custom.get("category", "secret"), rx))
    allow = p.get("allow") or {}
    known = {d.name for d in dets}
    for det_name in allow:
        if det_name not in known:
            c.error(f"{path}.allow.{det_name}", "not a detector used by this rule")
    scan = frozenset(p.get("scan", ["arguments", "results", "final_answer"]))
    if len(dets) != len(p.get("detectors", BUILTIN_DETECTORS)) + len(p.get("custom", [])):
        return None
    source = "|".join(f"(?P<g{k}>{d.regex.source})" for k, d in enumerate(dets))
    combined = c.regex(path, source, limit=len(source)) if dets else None
    if combined is None:
        if not dets:
            c.error(path, "no detectors")
        return None
    return SensitiveData(dets, combined, scan, {k: names(v) for k, v in allow.items()})


def build_identity_scope(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``identity_scope``."""
    arg = c.path(f"{path}.argument", p["argument"])
    return None if arg is None else IdentityScope(p["tool"], arg, p["equals"], successful_only(p))


SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="tool_access",
        doc="Only allowlisted tools, and no denylisted ones, may run.",
        params=check_params(
            {"allow": ref("names"), "deny": ref("names"), "attempts": ATTEMPTS},
            anyOf=[{"required": ["allow"]}, {"required": ["deny"]}],
        ),
        factory=build_tool_access,
        codes=("F-POLICY-UNAUTHORIZED_TOOL",),
        tool_fields=("allow[]",),
        forbids_tools=("deny[]",),
    ),
    CheckSpec(
        name="approval",
        doc="The listed tools need an approval on the call or a prior successful approval step.",
        params=check_params(
            {"tools": ref("names"), "approval_tools": ref("names"), "attempts": ATTEMPTS},
            ("tools",),
        ),
        factory=build_approval,
        codes=("F-POLICY-MISSING_APPROVAL",),
        tool_fields=("tools[]", "approval_tools[]"),
    ),
    CheckSpec(
        name="max_calls",
        doc="Each listed tool runs at most its limit of times.",
        params=check_params(
            {
                "limits": {
                    "type": "object",
                    "minProperties": 1,
                    "maxProperties": 1000,
                    "additionalProperties": ref("posint"),
                },
                "attempts": ATTEMPTS,
            },
            ("limits",),
        ),
        factory=build_max_calls,
        codes=("F-POLICY-MAX_CALLS",),
        tool_fields=("limits{}",),
    ),
    CheckSpec(
        name="forbidden_arguments",
        doc="A tool argument must not take the listed values or match the pattern.",
        params=check_params(
            {
                "tool": ref("name"),
                "argument": ref("path"),
                "values": {"type": "array", "minItems": 1, "maxItems": 1000},
                "pattern": ref("regex"),
                "attempts": ATTEMPTS,
            },
            ("tool", "argument"),
            anyOf=[{"required": ["values"]}, {"required": ["pattern"]}],
        ),
        factory=build_forbidden_arguments,
        codes=("F-POLICY-FORBIDDEN_ARGUMENT", "F-EVIDENCE-ARGS_NOT_JSON"),
        tool_fields=("tool",),
    ),
    CheckSpec(
        name="sensitive_data",
        doc="No secrets or personal data in tool arguments, tool results or the final answer.",
        params=check_params(
            {
                "detectors": {
                    "type": "array",
                    "maxItems": 20,
                    "items": {"enum": list(BUILTIN_DETECTORS)},
                },
                "custom": {
                    "type": "array",
                    "maxItems": 100,
                    "items": {
                        "type": "object",
                        "required": ["name", "pattern"],
                        "additionalProperties": False,
                        "properties": {
                            "name": ref("name"),
                            "pattern": ref("regex"),
                            "category": {"enum": ["secret", "pii"]},
                        },
                    },
                },
                "scan": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"enum": ["arguments", "results", "final_answer"]},
                },
                "allow": {"type": "object", "additionalProperties": ref("names")},
            }
        ),
        factory=build_sensitive_data,
        codes=("F-POLICY-SECRET_EXPOSURE", "F-POLICY-PII_EXPOSURE", "F-EVIDENCE-NO_FINAL_ANSWER"),
        tool_fields=("allow{}[]",),
    ),
    CheckSpec(
        name="identity_scope",
        doc="A tool argument must equal the run's user id or tenant id.",
        params=check_params(
            {
                "tool": ref("name"),
                "argument": ref("path"),
                "equals": {"enum": ["user_id", "tenant_id"]},
                "attempts": ATTEMPTS,
            },
            ("tool", "argument", "equals"),
        ),
        factory=build_identity_scope,
        codes=("F-POLICY-IDENTITY_SCOPE", "F-EVIDENCE-NO_IDENTITY", "F-EVIDENCE-ARGS_NOT_JSON"),
        tool_fields=("tool",),
    ),
)
"""The policy check types, declared once (see ``tracejudge.engine.checks``)."""
