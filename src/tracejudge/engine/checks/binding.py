"""Entity bindings: a call acts on an entity an earlier successful call returned (or was given).

``entity_binding`` and ``precedence`` share one evaluator (``Binding``): gather candidate
entities from source calls as they happen, test each target call's argument against them.
The value helpers (``flatten``, ``key_of``) are shared by every check that compares
entities with tool arguments or results.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tracejudge.engine.checks.base import (
    ATTEMPTS,
    Check,
    CheckSpec,
    check_params,
    ref,
    short,
    successful_only,
)
from tracejudge.engine.compile import Compiler, Path
from tracejudge.engine.context import Report, RunContext, ToolMeta, canonical, ok
from tracejudge.model.run import ToolCall


def flatten(value: Any) -> list[Any]:
    """Scalars found in a path's result, lists flattened (JMESPath projections nest)."""
    if value is None:
        return []
    if isinstance(value, list):
        out: list[Any] = []
        for v in value:
            out.extend(flatten(v))
        return out
    return [value]


def key_of(value: Any) -> str:
    """Identity used to compare entity ids (``"42"`` and ``42`` are the same order)."""
    return value if isinstance(value, str) else canonical(value)


_ARGS = re.compile(r"\bargs\b")
_RESULT = re.compile(r"\bresult\b")


@dataclass(slots=True, frozen=True)
class Owner:
    """Whose entities a source call returns: the value at ``path`` (over ``{args, result}``
    of the source call) must equal the run's ``user_id`` or ``tenant_id`` (``equals``).

    "Act only on the user's own reservations" is proven by the profile that lists them,
    or by a reservation lookup whose result names the user as its owner; the owner test
    lets both count without trusting a lookup of somebody else's records.
    """

    path: Path
    equals: str

    def holds(self, call: ToolCall, expected: str) -> bool:
        """Whether ``call`` is about ``expected`` (the run's identity)."""
        args = call.arguments if call.arguments_is_json else None
        got = self.path.search({"args": args, "result": call.result})
        return got is not None and key_of(got) == expected


@dataclass(slots=True, frozen=True)
class Source:
    """Where a source call's entities are: a path into its ``result``, its ``arguments``,
    or (``call``, for ``precedence``) ``{args, result}``. ``path`` None: the call counts
    as a source (for order) but returns no entities. ``owner``: its entities count only
    when the call is about the run's user (or tenant)."""

    path: Path | None
    read: str = "result"
    owner: Owner | None = None

    def value(self, call: ToolCall) -> tuple[bool, Any]:
        """``(captured, value)``: what ``path`` reads from ``call``."""
        args = call.arguments if call.arguments_is_json else None
        if self.read == "arguments":
            return args is not None, args
        if self.read == "result":
            return call.result is not None, call.result
        text = self.path.source if self.path is not None else ""
        captured = not (
            (_RESULT.search(text) and call.result is None) or (_ARGS.search(text) and args is None)
        )
        return captured, {"args": args, "result": call.result}

    def label(self, tool: str) -> str:
        """``tool at path`` (``tool arguments at path`` when read from arguments)."""
        if self.path is None:
            return tool
        where = " arguments" if self.read == "arguments" else ""
        return f"{tool}{where} at {self.path.source}"


class Binding:
    """A target call's argument must be an entity that an earlier successful call returned.

    Serves both ``entity_binding`` (sources: named tools, each with paths into results or
    arguments, or every lookup tool with an ``entities`` path) and ``precedence``
    (``before`` must precede ``after``, optionally binding a value of ``after`` to values
    of ``before``). ``successful_only``: failed target calls are not judged.
    """

    def __init__(
        self,
        target: str,
        target_path: Path | None,
        sources: dict[str, list[Source]],
        any_lookup: bool,
        label: str,
        target_label: str = "",
        entity_tools: tuple[str, ...] = (),
        successful_only: bool = False,
        latest_by: str | None = None,
    ) -> None:
        self.target_label = target_label or (target_path.source if target_path else "")
        self.target = target
        self.target_path = target_path
        self.sources = sources
        self.any_lookup = any_lookup
        self.label = label
        self.entity_tools = entity_tools
        """With ``any_lookup``: the lookup tools that declare ``entities`` (for explanations)."""
        self.successful_only = successful_only
        self.latest_by = latest_by
        """The result field naming the entity a record describes (``order_id``): with it,
        an entity is judged on its latest state. Any successful call's result that is a
        record of that entity (a write's too) replaces what earlier calls said of it, and
        the sources' paths are applied to it."""

    def _restate(self, call: ToolCall, candidates: dict[str, Any], dropped: dict[str, str]) -> None:
        """``latest_by``: the entity ``call``'s result describes qualifies now only if the
        sources' paths still pick it from that result ("return requested" is no longer
        'delivered')."""
        result = call.result
        if self.latest_by is None or not isinstance(result, dict):
            return
        entity = result.get(self.latest_by)
        if entity is None or isinstance(entity, (dict, list)):
            return
        key = key_of(entity)
        still = any(
            key_of(v) == key
            for listed in self.sources.values()
            for src in listed
            if src.path is not None and src.read == "result"
            for v in flatten(src.path.search(result))
        )
        if still:
            candidates[key] = entity
            dropped.pop(key, None)
        else:
            candidates.pop(key, None)
            dropped[key] = call.name

    def _sources_of(self, ctx: RunContext, i: int, call: ToolCall) -> list[Source] | None:
        found = self.sources.get(call.name)
        if found is not None:
            return found
        if self.any_lookup and ctx.kinds[i] == "lookup":
            meta = ctx.tools.get(call.name)
            if meta is not None and meta.entities is not None:
                return [Source(meta.entities)]
        return None

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        """One pass: gather entities from sources as they happen; test each target call."""
        candidates: dict[str, Any] = {}
        unknown = False  # a source ran but what its path reads was not captured
        unowned: list[str] = []  # sources skipped: not the run's user's (or no identity)
        any_source = False
        plain_lookups: list[str] = []  # successful lookups that declare no entities
        dropped: dict[str, str] = {}  # latest_by: entity -> the call whose result disqualified it
        for i, call in ctx.tool_index:
            if call.name == self.target and (ok(call) or not self.successful_only):
                if not any_source:
                    self._no_source(report, i, call, plain_lookups)
                else:
                    self._check(ctx, report, i, call, candidates, unknown, unowned, dropped)
            sources = self._sources_of(ctx, i, call)
            if sources is None and ok(call):
                self._restate(call, candidates, dropped)
            plain = sources is None and self.any_lookup and ctx.kinds[i] == "lookup"
            if plain and ok(call) and call.name not in plain_lookups:
                plain_lookups.append(call.name)
            if sources is None or not ok(call):
                continue
            any_source = True
            for src in sources:
                if src.path is None:
                    continue
                if src.owner is not None:
                    expected = getattr(ctx.run, src.owner.equals)
                    if expected is None or not src.owner.holds(call, expected):
                        if call.name not in unowned:
                            unowned.append(call.name)
                        continue
                captured, value = src.value(call)
                if not captured:
                    unknown = True
                    continue
                for v in flatten(src.path.search(value)):
                    candidates[key_of(v)] = v
            if self.latest_by is not None:
                self._restate(call, candidates, dropped)

    def _check(
        self,
        ctx: RunContext,
        report: Report,
        i: int,
        call: ToolCall,
        candidates: dict[str, Any],
        unknown: bool,
        unowned: list[str],
        dropped: dict[str, str] | None = None,
    ) -> None:
        sid = (call.span_id,)
        if self.target_path is None:
            return
        if call.arguments is None or not call.arguments_is_json:
            report.insufficient(
                "F-EVIDENCE-ARGS_NOT_JSON",
                sid,
                f"{call.name} arguments were not captured as JSON; cannot check entity binding",
                i,
            )
            return
        value = self.target_path.search({"args": call.arguments, "result": call.result})
        got = flatten(value)
        bad = [v for v in got if key_of(v) not in candidates]
        if got and not bad:
            return
        if unknown and not candidates:
            report.insufficient(
                "F-EVIDENCE-RESULT_MISSING",
                sid,
                f"results of {self.label} were not captured; cannot check {call.name}",
                i,
            )
            return
        if unowned and not candidates and self.owner_identity(ctx) is None:
            report.insufficient(
                "F-EVIDENCE-NO_IDENTITY",
                sid,
                f"the trace carries no {self.owner_field}; cannot tell whose entities "
                f"{', '.join(unowned)} returned, so cannot check {call.name}",
                i,
            )
            return
        shown = short(bad[0] if bad else None)
        changed = (dropped or {}).get(key_of(bad[0])) if bad else None
        if changed is not None:
            report.fail(
                "F-ACTION-ARG-ENTITY_BINDING",
                sid,
                f"{call.name} {self.target_label}={shown}: its latest state before the call, "
                f"as {changed}'s result gave it, no longer qualifies under {self.label}",
                i,
            )
            return
        skipped = (
            f"; calls about another {self.owner_field} do not count: {', '.join(unowned)}"
            if unowned
            else ""
        )
        report.fail(
            "F-ACTION-ARG-ENTITY_BINDING",
            sid,
            f"{call.name} {self.target_label}={shown} is not among the entities a prior "
            f"successful {self.label} returned (qualifying: {short(sorted(candidates)[:5])})"
            f"{skipped}",
            i,
        )

    @property
    def owner_field(self) -> str:
        """The identity the sources' owner tests compare with (``user_id`` by default)."""
        for listed in self.sources.values():
            for src in listed:
                if src.owner is not None:
                    return src.owner.equals
        return "user_id"

    def owner_identity(self, ctx: RunContext) -> str | None:
        """The run's identity that the owner tests read."""
        value: str | None = getattr(ctx.run, self.owner_field)
        return value

    def _no_source(self, report: Report, i: int, call: ToolCall, plain: list[str]) -> None:
        """The target ran before any source: say which lookups did run, if any."""
        if not plain:
            what = self.label
            if self.entity_tools:
                what = f"{self.label} that returns entities ({', '.join(self.entity_tools)})"
            text = f"{call.name} ran before any successful {what}"
        else:
            text = (
                f"{call.name} ran after successful lookup(s) {', '.join(plain)}, but none of "
                "them declares `entities:` in tools, so none can supply the entity; "
                f"lookups that do: {', '.join(self.entity_tools) or 'none'}"
            )
        report.fail("F-ACTION-ORDER", (call.span_id,), text, i)


def _source(src: dict[str, Any], at: str, c: Compiler, tools: dict[str, ToolMeta]) -> Source | None:
    """One ``{tool, path, from}`` of ``entity_binding.source``."""
    name = src["tool"]
    read = "arguments" if src.get("from") == "arguments" else "result"
    owner: Owner | None = None
    if "owner" in src:
        spec = src["owner"]
        op = c.path(f"{at}.owner.path", spec["path"])
        if op is None:
            return None
        owner = Owner(op, spec.get("equals", "user_id"))
    if "path" in src:
        jp = c.path(f"{at}.path", src["path"])
        return None if jp is None else Source(jp, read, owner)
    if read == "result" and name in tools and tools[name].entities is not None:
        return Source(tools[name].entities, owner=owner)
    what = "no path given" if read == "result" else "from: arguments needs a path"
    c.error(at, f"{what} and tools.{name} declares no entities" if read == "result" else what)
    return None


def build_entity_binding(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``entity_binding``: the argument is read from the call's arguments.

    ``source`` is one ``{tool, path, from}`` or a list of them (entities from several
    lookups, or from earlier calls' arguments); absent, every lookup with ``entities``.
    """
    target = c.path(f"{path}.argument", p["argument"])
    raw = p.get("source") or {}
    listed = raw if isinstance(raw, list) else [raw]
    sources: dict[str, list[Source]] = {}
    labels: list[str] = []
    failed = False
    for k, src in enumerate(listed):
        at = f"{path}.source[{k}]" if isinstance(raw, list) else f"{path}.source"
        if "tool" not in src:
            if "path" in src or "from" in src:
                c.error(at, "a path needs a tool")
            continue
        one = _source(src, at, c, tools)
        if one is None:
            failed = True
            continue
        sources.setdefault(src["tool"], []).append(one)
        labels.append(one.label(src["tool"]))
    any_lookup = not sources and not failed
    if any_lookup and not any(m.kind == "lookup" and m.entities for m in tools.values()):
        c.error(f"{path}.source", "no source given and no lookup tool declares entities")
    if target is None or failed:
        return None
    args_target = c.path(f"{path}.argument", f"args.{p['argument']}")
    label = " or ".join(labels) if labels else "lookup"
    entity_tools = tuple(
        sorted(n for n, m in tools.items() if m.kind == "lookup" and m.entities is not None)
    )
    return Binding(
        p["tool"],
        args_target,
        sources,
        any_lookup,
        label,
        p["argument"],
        entity_tools if any_lookup else (),
        successful_only(p),
        p.get("latest_by"),
    )


def build_precedence(
    p: dict[str, Any], path: str, c: Compiler, tools: dict[str, ToolMeta]
) -> Check | None:
    """``precedence``: both bind paths read ``{args, result}`` of their calls."""
    bind = p.get("bind")
    after_path = before_path = None
    if bind is not None:
        after_path = c.path(f"{path}.bind.after", bind["after"])
        before_path = c.path(f"{path}.bind.before", bind["before"])
        if after_path is None or before_path is None:
            return None
    source = Source(before_path, "call")
    return Binding(
        p["after"],
        after_path,
        {p["before"]: [source]},
        False,
        p["before"],
        successful_only=successful_only(p),
    )


_SOURCE_PROPS = {
    "tool": ref("name"),
    "path": ref("path"),
    "from": {"enum": ["result", "arguments"]},
    "owner": {
        "type": "object",
        "required": ["path"],
        "additionalProperties": False,
        "properties": {"path": ref("path"), "equals": {"enum": ["user_id", "tenant_id"]}},
    },
}
_SOURCE = {"type": "object", "additionalProperties": False, "properties": _SOURCE_PROPS}
_LISTED_SOURCE = {**_SOURCE, "required": ["tool"]}
SPECS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="entity_binding",
        doc="A call's argument must be an entity an earlier successful call returned (or "
        "was given).",
        params=check_params(
            {
                "tool": ref("name"),
                "argument": ref("path"),
                "source": {
                    "oneOf": [
                        _SOURCE,
                        {"type": "array", "minItems": 1, "maxItems": 50, "items": _LISTED_SOURCE},
                    ]
                },
                "latest_by": {"type": "string", "minLength": 1, "maxLength": 200},
                "attempts": ATTEMPTS,
            },
            ("tool", "argument"),
        ),
        factory=build_entity_binding,
        codes=(
            "F-ACTION-ORDER",
            "F-ACTION-ARG-ENTITY_BINDING",
            "F-EVIDENCE-ARGS_NOT_JSON",
            "F-EVIDENCE-RESULT_MISSING",
            "F-EVIDENCE-NO_IDENTITY",
        ),
        tool_fields=("tool", "source.tool", "source[].tool"),
    ),
    CheckSpec(
        name="precedence",
        doc="A successful `before` call must precede each `after` call, optionally bound.",
        params=check_params(
            {
                "before": ref("name"),
                "after": ref("name"),
                "bind": {
                    "type": "object",
                    "required": ["after", "before"],
                    "additionalProperties": False,
                    "properties": {"after": ref("path"), "before": ref("path")},
                },
                "attempts": ATTEMPTS,
            },
            ("before", "after"),
        ),
        factory=build_precedence,
        codes=(
            "F-ACTION-ORDER",
            "F-ACTION-ARG-ENTITY_BINDING",
            "F-EVIDENCE-ARGS_NOT_JSON",
            "F-EVIDENCE-RESULT_MISSING",
        ),
        tool_fields=("before", "after"),
    ),
)
"""The binding check types, declared once (see ``tracejudge.engine.checks``)."""
