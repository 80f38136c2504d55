"""What CEL predicates see as ``run``, built as small as the rule set's expressions allow.

cel-cpp converts the whole ``run`` value into its own maps and lists the first time a run's
activation is used, and each map costs about a microsecond. So the view is the cost of
CEL rules, and we build only what the expressions can read:

- top-level and per-step fields only when some expression names them;
- ``args``, ``result`` and ``attributes`` (arbitrary JSON maps) cut down to the keys the
  expressions name, but only when every mention of that field is a plain member access
  (``t.args.amount``). An index (``t.args['order-id']``), a macro or method on the map
  itself (``t.args.exists(k, ...)``, ``size(t.args)``), a comparison of the whole map or a
  string literal with the field's name keeps the map whole. This errs on keeping.
- the ``models`` list only when something names it (its token sums are cheap ints).

Pruning never changes a result: a key that is kept is whole, a key that was cut is one no
expression can reach by name.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from tracejudge.engine.celfuncs import rfc3339
from tracejudge.model.conversation import turns_of
from tracejudge.model.run import ModelCall, Run, Turn

if TYPE_CHECKING:
    from tracejudge.engine.context import ToolKind

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PRUNABLE = ("args", "result", "attributes")
"""Fields holding user JSON maps: the ones worth cutting to the keys named."""


@dataclass(slots=True, frozen=True)
class ViewSpec:
    """Which parts of the run view to build.

    ``fields``: top-level and per-step names to build (None: everything).
    ``keys``: for a field in ``PRUNABLE``, the keys of its map to keep (absent: whole).
    """

    fields: frozenset[str] | None = None
    keys: tuple[tuple[str, frozenset[str]], ...] = ()

    @classmethod
    def of(cls, sources: Iterable[str]) -> ViewSpec:
        """The view the CEL ``sources`` (expressions over ``run``) can read."""
        texts = list(sources)
        fields: set[str] = set()
        for text in texts:
            fields.update(_IDENT.findall(text))
        keys: list[tuple[str, frozenset[str]]] = []
        for name in PRUNABLE:
            named = _member_keys(name, texts)
            if named is not None:
                keys.append((name, frozenset(named)))
        return cls(frozenset(fields), tuple(keys))


def _member_keys(name: str, texts: list[str]) -> set[str] | None:
    """Keys read as ``name.key`` in every text, or None when ``name`` is used otherwise."""
    any_use = re.compile(rf"\b{name}\b")
    member = re.compile(rf"\b{name}\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\()")
    out: set[str] = set()
    for text in texts:
        uses = len(any_use.findall(text))
        found = member.findall(text)
        if len(found) != uses:
            return None  # an index, a call on the map, a literal: keep it whole
        out.update(found)
    return out


def _cut(value: Any, keep: frozenset[str] | None) -> Any:
    if keep is None or not isinstance(value, dict):
        return value
    return {k: value[k] for k in keep if k in value}


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


Builder: TypeAlias = Callable[[int, Any, "ToolKind | None"], dict[str, Any]]

_COMMON = {
    "index": "i",
    "span_id": "s.span_id",
    "status": "s.status",
    "error_type": "s.error_type",
    "duration_ms": "max(0, s.end_ns - s.start_ns) / 1e6",
    "start": "_ts(s.start_ns)",
    "end": "_ts(s.end_ns)",
}
_MODEL = {
    **_COMMON,
    "kind": "'model'",
    "name": "s.operation",
    "model": "s.response_model or s.request_model",
    "input_tokens": "s.input_tokens",
    "output_tokens": "s.output_tokens",
    "ok": "s.status != 'error'",
    "input_messages": "_json(s.input_messages)",
    "output_messages": "_json(s.output_messages)",
}
_TOOL = {
    **_COMMON,
    "kind": "'tool'",
    "name": "s.name",
    "tool_kind": "k",
    "args": "s.arguments",  # parsed JSON already: no conversion needed
    "args_is_json": "s.arguments_is_json",
    "result": "s.result",
    "approval_granted": "s.approval_granted",
    "ok": "s.status != 'error' and s.error_type is None",
}


def _cut_expr(value: str, keep: frozenset[str]) -> str:
    """Source that keeps only ``keep`` of the map ``value`` (other values pass through)."""
    picks = ", ".join(f"**({{{k!r}: v[{k!r}]}} if {k!r} in v else {{}})" for k in sorted(keep))
    return f"({{{picks}}} if type(v := {value}) is dict else v)"


@functools.cache
def _builder(table: str, fields: frozenset[str] | None, keys: tuple[Any, ...]) -> Builder:
    """A function ``(index, step, tool kind) -> dict`` building just the wanted fields.

    Generated once per rule set: one dict display per step instead of a call per field
    (several times faster, and the view is built for every run that has CEL rules).
    The source comes only from the fixed tables above and ``repr`` of keys that matched
    an identifier pattern, never from rule text as such.
    """
    exprs = _TOOL if table == "tool" else _MODEL
    cut = dict(keys)
    items = []
    for name, expr in exprs.items():
        if fields is not None and name not in fields:
            continue
        if name in cut:
            expr = _cut_expr(expr, cut[name])
        items.append(f"{name!r}: {expr}")
    src = f"def build(i, s, k):\n    return {{{', '.join(items)}}}\n"
    scope: dict[str, Any] = {"_ts": rfc3339, "_json": _jsonable}
    exec(compile(src, f"<tracejudge {table} view>", "exec"), scope)
    built: Builder = scope["build"]
    return built


_TOP: dict[str, Callable[[Run, frozenset[str] | None], Any]] = {
    "trace_id": lambda r, c: r.trace_id,
    "agent": lambda r, c: r.agent_name,
    "case_id": lambda r, c: r.case_id,
    "user_id": lambda r, c: r.user_id,
    "tenant_id": lambda r, c: r.tenant_id,
    "final_answer": lambda r, c: r.final_answer,
    "step_count": lambda r, c: len(r.steps),
    "duration_ms": lambda r, c: r.duration_ns / 1e6,
    "start": lambda r, c: rfc3339(r.start_ns),
    "end": lambda r, c: rfc3339(r.end_ns),
    "conversation_id": lambda r, c: r.conversation_id,
    "attributes": lambda r, c: _jsonable(_cut(r.root_attributes, c)),
}
_TURN = {
    "index": "t.index",
    "role": "t.role",
    "text": "t.text",
    "step_index": "t.step_index",
    "span_id": "t.span_id",
    "time": "_ts(t.time_ns)",
    "tool_calls": "[{'call_id': c.call_id, 'name': c.name, 'arguments': _json(c.arguments)}"
    " for c in t.tool_calls]",
    "call_id": "t.call_id",
    "tool_name": "t.tool_name",
    "result": "_json(t.result)",
}


@functools.cache
def _turn_builder(fields: frozenset[str] | None) -> Callable[[Turn], dict[str, Any]]:
    """``turn -> dict`` with just the wanted fields (generated like the step builders)."""
    items = [f"{n!r}: {e}" for n, e in _TURN.items() if fields is None or n in fields]
    src = f"def build(t):\n    return {{{', '.join(items)}}}\n"
    scope: dict[str, Any] = {"_ts": rfc3339, "_json": _jsonable}
    exec(compile(src, "<tracejudge turn view>", "exec"), scope)
    built: Callable[[Turn], dict[str, Any]] = scope["build"]
    return built


def _turns(run: Run, fields: frozenset[str] | None) -> list[dict[str, Any]]:
    build = _turn_builder(fields)
    return [build(t) for t in turns_of(run)]


_STEP_LISTS = ("tools", "tool_calls", "models", "model_calls", "input_tokens", "output_tokens")


@dataclass(slots=True, frozen=True)
class _Plan:
    turns: bool
    fields: frozenset[str] | None
    tools: Builder | None
    models: Builder | None
    counts: frozenset[str]
    top: tuple[tuple[str, Callable[[Run, frozenset[str] | None], Any]], ...]
    attributes: frozenset[str] | None


@functools.cache
def _plan(spec: ViewSpec | None) -> _Plan:
    fields = spec.fields if spec is not None else None
    keys = spec.keys if spec is not None else ()

    def want(name: str) -> bool:
        return fields is None or name in fields

    return _Plan(
        turns=want("turns"),
        fields=fields,
        tools=_builder("tool", fields, keys) if want("tools") else None,
        models=_builder("model", fields, keys) if want("models") else None,
        counts=frozenset(n for n in _STEP_LISTS if want(n)),
        top=tuple((n, g) for n, g in _TOP.items() if want(n)),
        attributes=dict(keys).get("attributes"),
    )


def run_view(run: Run, kinds: dict[int, ToolKind | None], spec: ViewSpec | None) -> dict[str, Any]:
    """The dict view of a run (documented in docs/checks.md, section CEL).

    ``spec`` None builds everything. ``tools`` and ``models`` are disjoint lists, so no
    step is converted twice. Cost is linear in steps.
    """
    plan = _plan(spec)
    out: dict[str, Any] = {}
    steps = run.steps
    if plan.tools is not None:
        tool = plan.tools
        out["tools"] = [tool(i, s, kinds.get(i)) for i, s in enumerate(steps) if s.kind == "tool"]
    counts = plan.counts
    if counts:
        if "tool_calls" in counts:
            out["tool_calls"] = sum(1 for s in steps if s.kind == "tool")
        models = [(i, s) for i, s in enumerate(steps) if isinstance(s, ModelCall)]
        if plan.models is not None:
            model = plan.models
            out["models"] = [model(i, s, None) for i, s in models]
        if "model_calls" in counts:
            out["model_calls"] = len(models)
        if "input_tokens" in counts:
            out["input_tokens"] = sum(s.input_tokens or 0 for _, s in models)
        if "output_tokens" in counts:
            out["output_tokens"] = sum(s.output_tokens or 0 for _, s in models)
    for name, get in plan.top:
        out[name] = get(run, plan.attributes)
    if plan.turns:
        out["turns"] = _turns(run, plan.fields)
    return out
