"""Check finished spans against the pinned convention registry: a live check without Weaver.

Why: OpenTelemetry Weaver's ``registry live-check`` found violations the snapshot tests did
not (a deprecated attribute on the exception event); it cannot run here, so this does the
part of it that needs only the registry files: the span's definition (by its
``gen_ai.operation.name`` and kind), its name pattern, its kind, the required attributes,
and for every attribute on the span and its events that it is defined, of the defined type,
and, for an enum, one of the listed values.

The registry is what ``semconv/`` holds: the pinned upstream GenAI files (Weaver's
``definition/2`` format), the core attributes and events we copy (``registry/core.yaml``),
and our own ``tracejudge.*`` registry as generated for Weaver (``weaver/tracejudge.yaml``).
A span without ``gen_ai.operation.name`` is one of our own span types (the guardrail span)
when it has that type's required attributes.

Enums are checked strictly, as live-check reports an undefined member, except an enum whose
only member is ``_OTHER`` (core's ``error.type``): it lists no values, so any string is one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from opentelemetry.sdk.trace import ReadableSpan

SEMCONV = Path(__file__).resolve().parents[2] / "semconv"

# gen_ai.operation.name -> span type, per span kind; the instrumentation emits these
_SPAN_TYPES: Mapping[str, Mapping[str, str]] = {
    "chat": {"client": "gen_ai.inference.client"},
    "text_completion": {"client": "gen_ai.inference.client"},
    "generate_content": {"client": "gen_ai.inference.client"},
    "embeddings": {"client": "gen_ai.embeddings.client"},
    "invoke_agent": {
        "client": "gen_ai.invoke_agent.client",
        "internal": "gen_ai.invoke_agent.internal",
    },
    "execute_tool": {"internal": "gen_ai.execute_tool.internal"},
}
_SCALARS: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "int": (int,),
    "double": (float,),
    "boolean": (bool,),
}
_PLACEHOLDER = re.compile(r"\{([a-z0-9_.]+)\}")

_WHEN_USED: Final = frozenset({"aws.bedrock.guardrail.id"})
"""Attributes a refinement marks ``required`` that name something a call may not use: the
AWS Bedrock refinement requires ``aws.bedrock.guardrail.id``, the id of *the* guardrail,
but a Converse call without ``guardrailConfig`` has none, and inventing one would be
false. Required here only when the thing exists, i.e. never reported missing; when the
call used a guardrail the Bedrock patch records its id (tests/instrumentation/test_bedrock.py)."""


@dataclass(frozen=True, slots=True)
class AttributeDef:
    """An attribute's definition: its type and, for an enum, its member values."""

    key: str
    type: str
    """``string``, ``int``, ``double``, ``boolean``, their ``[]`` forms, ``any``, ``enum``
    or ``template[...]``."""
    members: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class SignalDef:
    """A span or event definition with its attribute references resolved."""

    name: str
    kind: str | None = None
    name_patterns: tuple[str, ...] = ()
    attributes: Mapping[str, str] = field(default_factory=dict)
    """key -> requirement level (``required``, ``conditionally_required``, ...)."""

    @property
    def required(self) -> list[str]:
        """Keys that must be present."""
        return [k for k, level in self.attributes.items() if level == "required"]


def _level(value: Any) -> str:
    if value is None:
        return "recommended"
    if isinstance(value, str):
        return value
    (level,) = value  # {conditionally_required: "when ..."}
    return str(level)


def _type_name(raw: Any) -> tuple[str, tuple[Any, ...]]:
    if isinstance(raw, dict):
        return "enum", tuple(m["value"] for m in raw["members"])
    return str(raw), ()


class Registry:
    """The resolved registry: attributes, attribute groups, spans (and refinements), events."""

    def __init__(self, documents: Iterable[dict[str, Any]], core: dict[str, Any]) -> None:
        self.attributes: dict[str, AttributeDef] = {}
        self._groups: dict[str, list[dict[str, Any]]] = {}
        self._spans_raw: dict[str, dict[str, Any]] = {}
        self._refinements_raw: dict[str, dict[str, Any]] = {}
        self._events_raw: dict[str, dict[str, Any]] = {}
        for doc in [*documents, core]:
            for raw in doc.get("attributes") or []:
                typ, members = _type_name(raw["type"])
                self.attributes[raw["key"]] = AttributeDef(raw["key"], typ, members)
            for group in doc.get("attribute_groups") or []:
                self._groups[group["id"]] = group.get("attributes") or []
            for span in doc.get("spans") or []:
                self._spans_raw[span["type"]] = span
            for ref in doc.get("span_refinements") or []:
                self._refinements_raw[ref["id"]] = ref
            for event in doc.get("events") or []:
                self._events_raw[event["name"]] = event

    @classmethod
    def load(cls, root: Path = SEMCONV) -> Registry:
        """Everything under ``semconv/``: upstream, core and the generated Weaver registry."""
        docs = [
            yaml.safe_load(p.read_text(encoding="utf-8"))
            for p in sorted((root / "upstream").rglob("*.yaml"))
            if p.name != "manifest.yaml"
        ]
        docs.append(yaml.safe_load((root / "weaver" / "tracejudge.yaml").read_text()))
        core = yaml.safe_load((root / "registry" / "core.yaml").read_text(encoding="utf-8"))
        # core.yaml lists event attributes by key; give them the definition/2 shape
        core = {
            "attributes": core["attributes"],
            "events": [
                {"name": e["name"], "attributes": [{"ref": k} for k in e["attributes"]]}
                for e in core.get("events") or []
            ],
        }
        return cls(docs, core)

    # --- resolution --------------------------------------------------------------

    def _resolve(self, refs: Sequence[dict[str, Any]]) -> dict[str, str]:
        """Group references first, inline references over them (Weaver's precedence)."""
        out: dict[str, str] = {}
        for ref in refs:
            if "ref_group" in ref:
                out.update(self._group(ref["ref_group"]))
        for ref in refs:
            if "ref" in ref:
                key = ref["ref"]
                if "requirement_level" in ref or key not in out:
                    out[key] = _level(ref.get("requirement_level"))
        return out

    def _group(self, group_id: str) -> dict[str, str]:
        if group_id in self._groups:
            return self._resolve(self._groups[group_id])
        if group_id.startswith("span.") and group_id[5:] in self._spans_raw:
            return dict(self.span(group_id[5:]).attributes)
        raise KeyError(f"unknown attribute group {group_id!r}")

    @functools.cache  # noqa: B019 - one registry per session, never collected early
    def span(self, span_type: str, refinement: str | None = None) -> SignalDef:
        """A span definition, refined by ``refinement`` (a span refinement id) if given."""
        raw = self._spans_raw[span_type]
        attributes = self._resolve(raw.get("attributes") or [])
        name_note = str((raw.get("name") or {}).get("note") or "")
        if refinement is not None:
            ref = self._refinements_raw[refinement]
            assert ref["ref"] == span_type, (refinement, span_type)
            attributes.update(self._resolve(ref.get("attributes") or []))
            name_note = str((ref.get("name") or {}).get("note") or name_note)
        patterns = tuple(p for p in re.findall(r"`([^`]+)`", name_note) if p not in self.attributes)
        return SignalDef(span_type, str(raw["kind"]), patterns, attributes)

    def refinement_for(self, span_type: str, provider: object) -> str | None:
        """The provider's refinement of ``span_type`` (``openai.inference.client``), if any."""
        for rid, ref in self._refinements_raw.items():
            if ref["ref"] == span_type and rid.startswith(f"{provider}."):
                return rid
        return None

    def event(self, name: str) -> SignalDef | None:
        """An event definition, or None when the registry has no event of that name."""
        raw = self._events_raw.get(name)
        if raw is None:
            return None
        return SignalDef(name, None, (), self._resolve(raw.get("attributes") or []))

    # --- checking ------------------------------------------------------------------

    def check_attribute(self, key: str, value: Any) -> list[str]:
        """Problems with one attribute: unknown, wrong type, undefined enum member."""
        definition = self.attributes.get(key)
        if definition is None:
            template = next(
                (
                    a
                    for a in self.attributes.values()
                    if a.type.startswith("template[") and key.startswith(a.key + ".")
                ),
                None,
            )
            if template is None:
                return [f"attribute {key} is not in the registry"]
            definition = AttributeDef(key, template.type[len("template[") : -1])
        typ = definition.type
        if typ == "any":
            return []
        if typ == "enum":
            if definition.members == ("_OTHER",):
                return [] if isinstance(value, str) else [f"{key}: expected a string"]
            if value not in definition.members:
                return [f"{key}={value!r} is not a member of the enum {list(definition.members)}"]
            return []
        if typ.endswith("[]"):
            scalar = _SCALARS[typ[:-2]]
            ok = isinstance(value, (tuple, list)) and all(
                isinstance(v, scalar) and not (isinstance(v, bool) and bool not in scalar)
                for v in value
            )
        else:
            scalar = _SCALARS[typ]
            ok = isinstance(value, scalar) and not (isinstance(value, bool) and bool not in scalar)
        return [] if ok else [f"{key}={value!r}: expected {typ}, got {type(value).__name__}"]

    def check_span(self, span: ReadableSpan) -> list[str]:
        """Every problem with ``span`` and its events, each prefixed with the span's name."""
        attrs = dict(span.attributes or {})
        problems = [self._check_definition(span, attrs)]
        problems += [self.check_attribute(k, v) for k, v in attrs.items()]
        for event in span.events:
            problems.append(self._check_event(event.name, dict(event.attributes or {})))
        return [f"span {span.name!r}: {p}" for ps in problems for p in ps]

    def own_span_for(self, attrs: Mapping[str, Any]) -> str | None:
        """Our own span type (``tracejudge.*``, for what the GenAI conventions have no span
        for) whose required attributes ``attrs`` all has; None when there is none."""
        for span_type in self._spans_raw:
            if span_type.startswith("tracejudge.") and all(
                k in attrs for k in self.span(span_type).required
            ):
                return span_type
        return None

    def _check_definition(self, span: ReadableSpan, attrs: dict[str, Any]) -> list[str]:
        operation = attrs.get("gen_ai.operation.name")
        kind = span.kind.name.lower()
        own = self.own_span_for(attrs) if operation is None else None
        if own is not None:
            definition = self.span(own)
            span_type = own
        else:
            kinds = _SPAN_TYPES.get(str(operation))
            if kinds is None:
                return [f"no span definition for gen_ai.operation.name={operation!r}"]
            found = kinds.get(kind)
            if found is None:
                return [f"kind {kind} is not one {operation!r} is defined with ({sorted(kinds)})"]
            span_type = found
            definition = self.span(
                span_type, self.refinement_for(span_type, attrs.get("gen_ai.provider.name"))
            )
        problems = []
        if definition.kind != kind:
            problems.append(f"kind {kind}, but {span_type} is {definition.kind}")
        missing = [k for k in definition.required if k not in attrs and k not in _WHEN_USED]
        if missing:
            problems.append(f"required attribute(s) of {span_type} missing: {missing}")
        expected = expected_name(definition.name_patterns, attrs)
        if span.name != expected:
            problems.append(
                f"name should be {expected!r} (from {list(definition.name_patterns)}, {span_type})"
            )
        return problems

    def _check_event(self, name: str, attrs: dict[str, Any]) -> list[str]:
        definition = self.event(name)
        if definition is None:
            return [f"event {name!r} is not in the registry"]
        problems = [
            f"event {name!r}: {p}" for k, v in attrs.items() for p in self.check_attribute(k, v)
        ]
        missing = [k for k in definition.required if k not in attrs]
        if missing:
            problems.append(f"event {name!r}: required attribute(s) missing: {missing}")
        return problems


def expected_name(patterns: Sequence[str], attrs: Mapping[str, Any]) -> str | None:
    """The name the definition asks for: the first pattern (they are listed in order of
    preference, ``invoke_agent {gen_ai.agent.name}`` before ``invoke_agent``) whose keys
    the span all has, filled in. When none fits, the first with the missing keys left out
    (``chat`` for a call without a model: the conventions leave that case open)."""
    for pattern in patterns:
        if all(k in attrs for k in _PLACEHOLDER.findall(pattern)):
            return _PLACEHOLDER.sub(lambda m: str(attrs[m.group(1)]), pattern)
    if not patterns:
        return None
    text = _PLACEHOLDER.sub(lambda m: str(attrs.get(m.group(1), "")), patterns[0])
    return " ".join(text.split())


@functools.cache
def registry() -> Registry:
    """The registry of this checkout, loaded once per test session."""
    return Registry.load()
