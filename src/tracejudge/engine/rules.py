"""Loading a rules file: YAML, validated against the rules JSON Schema, then compiled.

Every problem is collected (schema errors, then semantic ones: duplicate ids, bad regexes,
bad CEL, bad paths) and raised together in one ``RulesError``. Rule files are untrusted:
the loader caps their size and does no I/O beyond reading the file it was given.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

import jsonschema
import yaml

from tracejudge.engine import ruleschema
from tracejudge.engine.celview import ViewSpec
from tracejudge.engine.checks import FACTORIES, Check
from tracejudge.engine.checks.custom import CelPredicate
from tracejudge.engine.compile import Compiler, Regex
from tracejudge.engine.context import Price, ToolMeta
from tracejudge.engine.docsize import expanded_size
from tracejudge.engine.errors import RulesError
from tracejudge.engine.lines import grader_rules, with_lines
from tracejudge.engine.toolrefs import check_tool_names
from tracejudge.engine.verdict import Layer, Severity
from tracejudge.model.run import Run

MAX_FILE_BYTES = 1 << 20
MAX_RULES = 1000
MAX_NODES = 200_000
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when present: faster, and it refuses absurd nesting at once."""


@dataclass(slots=True, frozen=True)
class Selector:
    """Which runs a rule applies to; every given condition must hold."""

    agents: frozenset[str] = frozenset()
    cases: frozenset[str] = frozenset()
    tools_present: frozenset[str] = frozenset()
    attributes: tuple[tuple[str, Any], ...] = ()
    attributes_match: tuple[tuple[str, Regex], ...] = ()

    def matches(self, run: Run, tool_names: Collection[str]) -> bool:
        """True when the rule should judge ``run``."""
        if self.agents and run.agent_name not in self.agents:
            return False
        if self.cases and run.case_id not in self.cases:
            return False
        if self.tools_present and not all(t in tool_names for t in self.tools_present):
            return False
        attrs = run.root_attributes
        for key, want in self.attributes:
            if key not in attrs or attrs[key] != want:
                return False
        for key, rx in self.attributes_match:
            value = attrs.get(key)
            if value is None or not rx.test(str(value)):
                return False
        return True


@dataclass(slots=True, frozen=True)
class Rule:
    """One compiled rule."""

    id: str
    layer: Layer
    severity: Severity
    check_type: str
    check: Check
    selector: Selector | None = None
    """None: the rule judges every run."""
    description: str = ""


@dataclass(slots=True, frozen=True)
class RuleSet:
    """A compiled rules file. ``version`` is a content hash: verdicts cite it."""

    version: str
    rules: tuple[Rule, ...]
    tools: dict[str, ToolMeta]
    prices: dict[str, Price]
    source: str = "<string>"
    cel_view: ViewSpec | None = None
    """What of the run the rule set's CEL predicates can read: the run view given to CEL
    holds only that (cel-cpp converts the whole view per run, so size is cost).
    None: the full view."""
    warnings: tuple[str, ...] = ()
    """Problems that do not stop loading (``path: message``), e.g. tool names that could
    not be checked because the file declares no ``tools:``. ``tracejudge rules check``
    prints them."""


def without_baselines_note(ruleset: RuleSet) -> str | None:
    """What to tell the user who judges with ``ruleset`` but gave no baselines directory:
    its baseline rules then do not apply (``not_applicable``). ``None`` when it has none.

    Said once at start rather than on every run, so a healthy run still reads ``pass``
    and the skipped comparison is never silent.
    """
    ids = [r.id for r in ruleset.rules if r.check_type == "baseline"]
    if not ids:
        return None
    return (
        f"no baselines directory given: baseline rule(s) {', '.join(ids)} do not apply "
        "(not_applicable)"
    )


def without_graders_note(ruleset: RuleSet) -> str | None:
    """What to say where grader rules are not run (``serve``, ``eval --no-graders``): they
    are then ``not_applicable``. ``None`` when the rule set has none."""
    ids = [r.id for r in ruleset.rules if r.check_type == "grader"]
    if not ids:
        return None
    return f"grader rule(s) {', '.join(ids)} are not run here (not_applicable)"


@functools.cache
def schema() -> dict[str, Any]:
    """The JSON Schema of rules files, built from the check declarations.

    The copy shipped in the package (``schema/rules.schema.json``) is generated from the
    same declarations and kept fresh by ``python -m tracejudge.engine.ruleschema --check``;
    validating against the declarations themselves means a declared check always loads.
    """
    return ruleschema.build()


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    """The schema is ours and fixed: checking it against the meta-schema is a test's job
    (tests/engine/test_check_registry.py), not every load's (it cost ~0.3 s of each
    ``eval``, more than judging 100 runs)."""
    return jsonschema.validators.validator_for(schema())(schema())


def _fmt_path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "<root>"


def _schema_errors(doc: Any) -> list[str]:
    errors = []
    for err in _validator().iter_errors(doc):
        msg = err.message
        if err.validator == "enum":
            allowed: Any = err.validator_value
            opts = ", ".join(str(o) for o in allowed)
            msg = f"{err.instance!r} is not one of {opts}"
        errors.append(f"{_fmt_path(err.absolute_path)}: {msg}")
    return sorted(set(errors))


def load_rules(path: str | FsPath) -> RuleSet:
    """Load and compile a rules file; ``RulesError`` lists every problem found.

    A ``str`` with a newline in it is the rules text itself (no file name has one), so
    ``load_rules(path_or_text)`` works for both; ``load_rules_text`` says it explicitly.
    """
    if isinstance(path, str) and "\n" in path:
        return load_rules_text(path)
    p = FsPath(path)
    try:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise RulesError(str(p), [f"{size} bytes, more than {MAX_FILE_BYTES}"])
        text = p.read_text("utf-8")
    except OSError as exc:
        raise RulesError(str(p), [f"cannot read: {exc.strerror or exc}"]) from exc
    except UnicodeDecodeError as exc:
        raise RulesError(str(p), [f"not UTF-8: {exc.reason}"]) from exc
    return load_rules_text(text, source=str(p))


def load_rules_text(text: str, source: str = "<string>") -> RuleSet:
    """Compile rules from YAML (or JSON) text; ``RulesError`` lists every problem found."""
    raw = text.encode("utf-8")
    if len(raw) > MAX_FILE_BYTES:
        raise RulesError(source, [f"{len(raw)} bytes, more than {MAX_FILE_BYTES}"])
    try:
        doc = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        at = f"line {where.line + 1}, column {where.column + 1}: " if where else ""
        raise RulesError(source, [f"{at}YAML: {problem}"]) from exc
    except RecursionError as exc:
        raise RulesError(source, ["YAML nested too deeply"]) from exc
    if expanded_size(doc, MAX_NODES) > MAX_NODES:
        # YAML aliases can expand a small file exponentially ("billion laughs"); validation
        # and compilation walk the expanded tree, so bound it before either runs
        raise RulesError(source, [f"more than {MAX_NODES} values once aliases expand"])
    n_rules = (
        len(doc["rules"]) if isinstance(doc, dict) and isinstance(doc.get("rules"), list) else 0
    )
    if n_rules > MAX_RULES:
        raise RulesError(source, [f"rules: {n_rules} rules, more than {MAX_RULES}"])
    errors = _schema_errors(doc)
    if errors:
        raise RulesError(source, with_lines(text, errors, grader_rules(doc)))
    assert isinstance(doc, dict)
    comp = Compiler()
    tools = _tools(doc.get("tools") or {}, comp)
    prices = {
        str(m): Price(float(v["input"]), float(v["output"]))
        for m, v in (doc.get("prices") or {}).items()
    }
    rules: list[Rule] = []
    seen: dict[str, int] = {}
    for k, r in enumerate(doc["rules"]):
        at = f"rules[{k}]"
        if r["id"] in seen:
            comp.error(
                f"{at}.id", f"duplicate rule id {r['id']!r} (first at rules[{seen[r['id']]}])"
            )
        seen.setdefault(r["id"], k)
        rule = _rule(r, at, comp, tools)
        if rule is not None:
            rules.append(rule)
    name_errors, warnings = check_tool_names(doc)
    for err in name_errors:
        comp.errors.append(err)
    if comp.errors:
        raise RulesError(source, with_lines(text, comp.errors, grader_rules(doc)))
    digest = hashlib.sha256(raw).hexdigest()[:16]
    view = ViewSpec.of(
        s for r in rules if isinstance(r.check, CelPredicate) for s in r.check.sources
    )
    return RuleSet(f"sha256:{digest}", tuple(rules), tools, prices, source, view, tuple(warnings))


def _tools(spec: dict[str, Any], comp: Compiler) -> dict[str, ToolMeta]:
    out: dict[str, ToolMeta] = {}
    for name, t in spec.items():
        entities = comp.path(f"tools.{name}.entities", t["entities"]) if "entities" in t else None
        if "entities" in t and t["kind"] != "lookup":
            comp.error(f"tools.{name}.entities", "only lookup tools return entities")
        out[str(name)] = ToolMeta(
            t["kind"], entities, t.get("idempotency_argument"), t.get("category")
        )
    return out


def _rule(r: dict[str, Any], at: str, comp: Compiler, tools: dict[str, ToolMeta]) -> Rule | None:
    sel = r.get("select") or {}
    attrs_match: list[tuple[str, Regex]] = []
    for key, pattern in (sel.get("attributes_match") or {}).items():
        rx = comp.regex(f"{at}.select.attributes_match.{key}", pattern)
        if rx is not None:
            attrs_match.append((key, rx))
    selector = None
    if sel:
        selector = Selector(
            agents=_names(sel.get("agent")),
            cases=_names(sel.get("case")),
            tools_present=_names(sel.get("tools_present")),
            attributes=tuple((sel.get("attributes") or {}).items()),
            attributes_match=tuple(attrs_match),
        )
    params = r["check"]
    if params["type"] == "cel" and not params.get("message") and r.get("description"):
        # A false predicate says what the rule is for, not its expression (the rule id,
        # on every finding, leads to that).
        params = {**params, "message": " ".join(str(r["description"]).split())}
    check = FACTORIES[params["type"]](params, f"{at}.check", comp, tools)
    if check is None:
        return None
    return Rule(
        r["id"],
        r["layer"],
        r.get("severity", "fail"),
        params["type"],
        check,
        selector,
        r.get("description", ""),
    )


def _names(value: Any) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset((value,))
    return frozenset(str(v) for v in value)
