"""Cases files: datasets as executable specifications, one expected outcome per case id.

A rules file says what every run must do; a cases file says what the run of *one case*
(``tracejudge.case.id``) must do: the writes it must make with which arguments, the actions
it must not take, the state it must leave and what it must tell the user. The ``case``
check (``engine.checks.case``) judges a run against its entry.

The file is YAML (``{version: 1, cases: [...]}``; JSON is YAML too) or JSON lines (one case
per line, the form dataset exporters write). Like rules files, cases files are untrusted:
the loader caps sizes, validates every case against the shipped JSON Schema
(``schema/cases.schema.json``), compiles regexes with RE2 and paths with JMESPath, and
raises one ``CasesError`` listing every problem as ``line N: case 'id' field[2].sub: why``.

YAML 1.1 turns ``no`` into ``false`` and ``2024-05-20`` into a date, which would make an
argument never equal the string a tool received; this loader keeps both as strings (only
``true``/``false`` are booleans), because case arguments are full of dates and yes/no.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import jsonschema
import yaml

from tracejudge.engine.compile import Compiler, Regex
from tracejudge.engine.docsize import expanded_size

if TYPE_CHECKING:
    # the checks import this module (the case check reads cases), so not at import time
    from tracejudge.engine.checks.outcome import Expectation
    from tracejudge.engine.context import ToolMeta

MAX_CASES_FILE_BYTES = 16 << 20
MAX_CASES = 100_000
MAX_NODES = 4_000_000
"""Values in the whole file once YAML aliases expand (a "billion laughs" bound)."""

ArgMode: TypeAlias = Literal["exact", "subset", "keys", "unordered", "ignore", "tolerance", "delta"]
CommunicateIn: TypeAlias = Literal["final_answer", "assistant_messages"]

_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BOOL = "tag:yaml.org,2002:bool"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _Loader(_BASE):  # type: ignore[misc]
    """The safe loader without YAML 1.1's yes/no/on/off booleans and implicit dates."""

    yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag not in (_BOOL, _TIMESTAMP)]
        for k, v in _BASE.yaml_implicit_resolvers.items()
    }


_Loader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


class CasesError(ValueError):
    """A cases file is invalid; ``errors`` lists every problem, each with its position."""

    def __init__(self, source: str, errors: list[str]) -> None:
        self.source = source
        self.errors = list(errors)
        shown = "\n  ".join(self.errors)
        super().__init__(f"{source}: {len(self.errors)} error(s) in cases file:\n  {shown}")


@dataclass(slots=True, frozen=True)
class ArgMatch:
    """How one argument is compared: ``exact``, ``subset``, ``keys`` (records on the
    expected keys), ``unordered`` (a list as a multiset), ``ignore``, or a number within
    ``amount`` (``tolerance``: relative to the expected value; ``delta``: absolute)."""

    mode: ArgMode
    amount: float = 0.0


EXACT = ArgMatch("exact")


@dataclass(slots=True, frozen=True)
class ActionSpec:
    """One expected or forbidden action: a tool and, optionally, its arguments."""

    tool: str
    arguments: dict[str, Any] | None
    """None: any arguments (the tool name alone decides)."""
    exact: bool
    """True: the call has no arguments besides the listed ones (``match: exact``)."""
    per_argument: dict[str, ArgMatch]
    soft: bool
    """``severity: warn``: a finding about this action is at most a warning."""
    where: str
    """``expected_actions[2]``: where the action is in its case, for explanations."""


@dataclass(slots=True, frozen=True)
class Info:
    """One piece of information the agent must communicate: a text or an RE2 regex."""

    text: str | None
    regex: Regex | None

    @property
    def label(self) -> str:
        """How explanations name it."""
        return repr(self.text) if self.text is not None else f"/{self.regex_source}/"

    @property
    def regex_source(self) -> str:
        """The regex as written (empty for a text item)."""
        return self.regex.source if self.regex is not None else ""


@dataclass(slots=True, frozen=True)
class Case:
    """One compiled case."""

    id: str
    expected: tuple[ActionSpec, ...] | None
    """None: the case says nothing about writes (no ``expected_actions`` key), so writes
    are not judged; ``()``: no write is expected, so every write is unexpected."""
    ordered: bool
    forbidden: tuple[ActionSpec, ...]
    state: tuple[Expectation, ...]
    communicate: tuple[Info, ...]
    communicate_in: CommunicateIn
    description: str = ""
    line: int | None = None


@dataclass(slots=True, frozen=True)
class CaseSet:
    """A compiled cases file. ``version`` is a content hash, like ``RuleSet.version``."""

    cases: dict[str, Case]
    source: str = "<string>"
    version: str = ""

    def get(self, case_id: str) -> Case | None:
        """The case's entry, None when the file has none."""
        return self.cases.get(case_id)

    def __len__(self) -> int:
        return len(self.cases)

    def __contains__(self, case_id: object) -> bool:
        return case_id in self.cases

    def tool_warnings(self, tools: Mapping[str, ToolMeta]) -> list[str]:
        """Tools the cases name that the rules' ``tools:`` do not declare.

        Warnings, not errors: one cases file may serve agents with different rules files,
        and a mistyped expected tool fails every run anyway. A mistyped *forbidden* tool
        would pass silently, which is why this is worth printing. Empty without ``tools:``.
        """
        if not tools:
            return []
        declared = sorted(tools)
        out: list[str] = []
        for case in self.cases.values():
            for spec in (*(case.expected or ()), *case.forbidden):
                if spec.tool not in tools:
                    out.append(
                        f"{_label(case.id, case.line)} {spec.where}.tool: {spec.tool!r} is not "
                        f"declared in the rules' tools{_hint(spec.tool, declared)}"
                    )
        return out


@functools.cache
def schema() -> dict[str, Any]:
    """The JSON Schema of cases files, shipped in the package."""
    text = resources.files("tracejudge.engine").joinpath("schema/cases.schema.json").read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


@functools.cache
def _validators() -> tuple[Any, Any]:
    """(whole document, one case) validators; the case one serves JSON lines too."""
    doc = schema()
    cls = jsonschema.validators.validator_for(doc)  # doc is checked by a test, not here
    case_schema = {"$schema": doc["$schema"], "$defs": doc["$defs"], "$ref": "#/$defs/case"}
    top = dict(doc)
    top["properties"] = dict(doc["properties"], cases={"type": "array"})
    return cls(top), cls(case_schema)


def _fmt_path(parts: Iterator[Any] | Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _hint(name: str, declared: list[str]) -> str:
    close = difflib.get_close_matches(name, declared, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _label(case_id: Any, line: int | None, index: int | None = None) -> str:
    where = f"line {line}: " if line is not None else ""
    if isinstance(case_id, str) and case_id:
        return f"{where}case {case_id!r}"
    return f"{where}cases[{index}]" if index is not None else f"{where}case"


def load_cases(path: str | FsPath) -> CaseSet:
    """Load a cases file: JSON lines when it ends in ``.jsonl``/``.ndjson``, else YAML/JSON."""
    p = FsPath(path)
    try:
        size = p.stat().st_size
        if size > MAX_CASES_FILE_BYTES:
            raise CasesError(str(p), [f"<file>: {size} bytes, more than {MAX_CASES_FILE_BYTES}"])
        text = p.read_text("utf-8")
    except OSError as exc:
        raise CasesError(str(p), [f"<file>: cannot read: {exc.strerror or exc}"]) from exc
    except UnicodeDecodeError as exc:
        raise CasesError(str(p), [f"<file>: not UTF-8: {exc.reason}"]) from exc
    fmt: Literal["yaml", "jsonl"] = "jsonl" if p.suffix.lower() in (".jsonl", ".ndjson") else "yaml"
    return load_cases_text(text, source=str(p), fmt=fmt)


def load_cases_text(
    text: str, source: str = "<string>", fmt: Literal["yaml", "jsonl"] = "yaml"
) -> CaseSet:
    """Compile cases from YAML/JSON or JSON-lines text; ``CasesError`` lists every problem."""
    raw = text.encode("utf-8")
    if len(raw) > MAX_CASES_FILE_BYTES:
        raise CasesError(source, [f"<file>: {len(raw)} bytes, more than {MAX_CASES_FILE_BYTES}"])
    errors: list[str] = []
    entries = _jsonl_entries(text, errors) if fmt == "jsonl" else _yaml_entries(text, errors)
    if len(entries) > MAX_CASES:
        raise CasesError(source, [f"cases: {len(entries)} cases, more than {MAX_CASES}"])
    _, case_validator = _validators()
    comp = Compiler()
    cases: dict[str, Case] = {}
    first: dict[str, str] = {}
    for index, (line, doc) in enumerate(entries):
        case_id = doc.get("id") if isinstance(doc, dict) else None
        label = _label(case_id, line, index)
        schema_errors = sorted(
            {
                f"{label}{' ' + _fmt_path(e.absolute_path) if e.absolute_path else ''}: "
                + _message(e)
                for e in case_validator.iter_errors(doc)
            }
        )
        if isinstance(case_id, str):
            if case_id in first:
                errors.append(f"{label}: duplicate case id (first at {first[case_id]})")
                continue
            first[case_id] = f"line {line}" if line is not None else f"cases[{index}]"
        if schema_errors:
            errors.extend(schema_errors)
            continue
        assert isinstance(case_id, str)
        case = _compile_case(doc, label, line, comp)
        if case is not None:
            cases[case_id] = case
        errors.extend(comp.errors)  # in file order, with the case's schema errors
        comp.errors.clear()
    if errors:
        raise CasesError(source, errors)
    digest = hashlib.sha256(raw).hexdigest()[:16]
    return CaseSet(cases, source, f"sha256:{digest}")


def _message(err: Any) -> str:
    if err.validator == "enum":
        return f"{err.instance!r} is not one of {', '.join(str(o) for o in err.validator_value)}"
    return str(err.message)


def _jsonl_entries(text: str, errors: list[str]) -> list[tuple[int | None, Any]]:
    out: list[tuple[int | None, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except ValueError as exc:
            errors.append(f"line {n}: not JSON: {exc}")
        except RecursionError:
            errors.append(f"line {n}: JSON nested too deeply")
        if len(out) > MAX_CASES:
            break
    if sum(expanded_size(doc, MAX_NODES) for _, doc in out) > MAX_NODES:
        errors.append(f"<file>: more than {MAX_NODES} values")
        return []
    return out


def _yaml_entries(text: str, errors: list[str]) -> list[tuple[int | None, Any]]:
    """Each case with its line, read from the composed node tree (so errors can say where)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        doc = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "<file>"
        problem = getattr(exc, "problem", None) or str(exc)
        errors.append(f"{at}: YAML: {problem}")
        return []
    except RecursionError:
        errors.append("<file>: YAML nested too deeply")
        return []
    finally:
        loader.dispose()
    if expanded_size(doc, MAX_NODES) > MAX_NODES:
        errors.append(f"<file>: more than {MAX_NODES} values once aliases expand")
        return []
    top, _ = _validators()
    top_errors = [
        f"{_fmt_path(e.absolute_path) or '<root>'}: {_message(e)}" for e in top.iter_errors(doc)
    ]
    if top_errors:
        errors.extend(sorted(set(top_errors)))
        return []
    assert isinstance(doc, dict)
    assert node is not None
    lines: list[int | None] = []
    for key, value in node.value:
        if getattr(key, "value", None) == "cases" and isinstance(value, yaml.SequenceNode):
            lines = [item.start_mark.line + 1 for item in value.value]
    cases = doc["cases"]
    if len(lines) != len(cases):
        lines = [None] * len(cases)
    return list(zip(lines, cases, strict=True))


_EXPECTATIONS = ("expected_actions", "forbidden_actions", "expected_state", "must_communicate")


def _compile_case(doc: dict[str, Any], label: str, line: int | None, comp: Compiler) -> Case | None:
    if not any(k in doc for k in _EXPECTATIONS):
        comp.error(
            label,
            "no expectations: give expected_actions, forbidden_actions, expected_state or "
            "must_communicate (an entry without them would pass every run)",
        )
        return None
    from tracejudge.engine.checks.outcome import compile_expectations

    n_errors = len(comp.errors)
    expected = None
    if "expected_actions" in doc:
        expected = tuple(
            _action(a, f"expected_actions[{k}]", True)
            for k, a in enumerate(doc["expected_actions"])
        )
    forbidden = tuple(
        _action(a, f"forbidden_actions[{k}]", False)
        for k, a in enumerate(doc.get("forbidden_actions") or ())
    )
    state = compile_expectations(doc.get("expected_state") or [], f"{label} expected_state", comp)
    infos: list[Info] = []
    for k, item in enumerate(doc.get("must_communicate") or ()):
        if isinstance(item, str):
            infos.append(Info(item, None))
        elif "text" in item:
            infos.append(Info(str(item["text"]), None))
        else:
            rx = comp.regex(f"{label} must_communicate[{k}].regex", item["regex"])
            if rx is not None:
                infos.append(Info(None, rx))
    if len(comp.errors) > n_errors or state is None:
        return None
    return Case(
        id=doc["id"],
        expected=expected,
        ordered=bool(doc.get("ordered", False)),
        forbidden=forbidden,
        state=tuple(state),
        communicate=tuple(infos),
        communicate_in=doc.get("communicate_in", "final_answer"),
        description=doc.get("description", ""),
        line=line,
    )


def _action(a: dict[str, Any], where: str, expected: bool) -> ActionSpec:
    per: dict[str, ArgMatch] = {}
    for name, m in (a.get("argument_match") or {}).items():
        if isinstance(m, str):
            per[str(name)] = ArgMatch(m)  # type: ignore[arg-type]  # schema: the string modes
        elif "tolerance" in m:
            per[str(name)] = ArgMatch("tolerance", float(m["tolerance"]))
        else:
            per[str(name)] = ArgMatch("delta", float(m["delta"]))
    default = "exact" if expected else "subset"
    return ActionSpec(
        tool=a["tool"],
        arguments=a.get("arguments"),
        exact=a.get("match", default) == "exact",
        per_argument=per,
        soft=a.get("severity") == "warn",
        where=where,
    )
