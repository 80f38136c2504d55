"""Each check type is declared once; the schema, tool-name checks and code reference follow.

The declarations (``CheckSpec`` in each check module) are the single source: the shipped
JSON Schema must equal what they generate, docs/failure-codes.md must document exactly the
codes they (and the engine itself) declare, and a code the sources emit without declaring
it fails here, before it reaches a dashboard that nobody told about it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tracejudge.engine import evidence, ruleschema, shadow
from tracejudge.engine.checks import (
    CODE_PATTERN,
    FACTORIES,
    SPECS,
    CheckSpec,
    _validate,
    declared_codes,
)
from tracejudge.engine.checks.base import check_params, ref
from tracejudge.engine.rules import schema

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tracejudge"
CODES_DOC = ROOT / "docs" / "failure-codes.md"
_CODE_IN_TEXT = re.compile(r"(?<![A-Za-z0-9_-])F-[A-Z]+(?:-[A-Z_]+)+(?![A-Za-z0-9_*])")


def _engine_codes() -> frozenset[str]:
    return declared_codes() | frozenset(evidence.CODES) | frozenset(shadow.CODES)


def _doc_rows() -> list[tuple[str, dict[str, str]]]:
    """``(code, {column: cell})`` for every row of every code table in the reference."""
    rows: list[tuple[str, dict[str, str]]] = []
    header: list[str] = []
    for line in CODES_DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header:
            header = cells
            continue
        if set(cells[0]) <= set("-: "):
            continue
        m = re.fullmatch(r"`(F-[A-Z_-]+)`", cells[0])
        if m and CODE_PATTERN.fullmatch(m.group(1)):
            rows.append((m.group(1), dict(zip(header, cells, strict=False))))
    return rows


def _literals(path: Path) -> tuple[list[str], list[str]]:
    """Codes in the string literals of a module, and f-string pieces that build one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    built: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for part in node.values:
                if (
                    isinstance(part, ast.Constant)
                    and isinstance(part.value, str)
                    and re.search(r"F-[A-Z]+-(?:[A-Z_]+-)*$", part.value)
                ):
                    built.append(part.value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.extend(_CODE_IN_TEXT.findall(node.value))
    return found, built


def test_shipped_schema_is_generated_from_the_declarations() -> None:
    """Editors and CI users read the shipped file: it must say what the loader enforces."""
    shipped = (SRC / "engine" / "schema" / "rules.schema.json").read_text(encoding="utf-8")
    assert shipped == ruleschema.render(ruleschema.build()), (
        "stale: run `make rules-schema` (scripts/gen_rules_schema.py)"
    )
    assert schema() == ruleschema.build()


def test_check_mode_fails_on_a_stale_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make rules-schema-check` (in `make test`) is what stops a forgotten regeneration."""
    out = tmp_path / "rules.schema.json"
    monkeypatch.setattr(ruleschema, "OUTPUT", out)
    assert ruleschema.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert ruleschema.main([]) == 0
    assert ruleschema.main(["--check"]) == 0
    out.write_text(out.read_text().replace('"step_pattern"', '"step_patern"', 1))
    assert ruleschema.main(["--check"]) == 1


def test_every_declared_type_is_in_the_schema_and_the_factories() -> None:
    """One declaration feeds the enum, the per-type schema and the builder table."""
    doc = schema()
    assert doc["$defs"]["check"]["properties"]["type"]["enum"] == list(SPECS)
    assert set(FACTORIES) == set(SPECS)
    for name, spec in SPECS.items():
        assert doc["$defs"][f"c_{name}"]["description"] == spec.doc
        assert FACTORIES[name] is spec.factory


def test_adding_a_check_type_is_one_declaration() -> None:
    """A new ``CheckSpec`` is all the schema needs: its params are enforced, nothing else."""
    spec = CheckSpec(
        name="says_sorry",
        doc="The final answer must apologise.",
        params=check_params({"tool": ref("name"), "times": ref("posint")}, ("tool",)),
        factory=SPECS["cel"].factory,
        codes=("F-OUTPUT-NO_APOLOGY",),
        tool_fields=("tool",),
    )
    _validate(spec)
    doc = ruleschema.build([*SPECS.values(), spec])
    validator = jsonschema.Draft202012Validator(doc)

    def rule(check: dict[str, Any]) -> dict[str, Any]:
        return {"version": 1, "rules": [{"id": "r", "layer": "outcome", "check": check}]}

    assert list(validator.iter_errors(rule({"type": "says_sorry", "tool": "x"}))) == []
    assert list(validator.iter_errors(rule({"type": "says_sorry"})))  # tool is required
    assert list(validator.iter_errors(rule({"type": "says_sorry", "tool": "x", "tims": 1})))
    # the shipped schema, built without it, refuses the type
    assert list(jsonschema.Draft202012Validator(schema()).iter_errors(rule({"type": "says_sorry"})))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"name": "SaysSorry"}, "lower_snake_case"),
        ({"params": {"type": "object", "properties": {"tool": {}}}}, "closed object schema"),
        ({"codes": ()}, "declares no codes"),
        ({"codes": ("F-output-sorry",)}, "bad code"),
        ({"tool_fields": ("tols[]",)}, "not a parameter"),
        ({"doc": "two\nlines"}, "one line"),
    ],
)
def test_a_malformed_declaration_is_refused(change: dict[str, Any], problem: str) -> None:
    """Declarations are checked at import, so a slip names the check instead of a rules file."""
    base: dict[str, Any] = {
        "name": "says_sorry",
        "doc": "x",
        "params": check_params({"tools": ref("names")}),
        "factory": SPECS["cel"].factory,
        "codes": ("F-OUTPUT-NO_APOLOGY",),
        "tool_fields": ("tools[]",),
    }
    with pytest.raises(ValueError, match=problem):
        _validate(CheckSpec(**{**base, **change}))


def test_reference_documents_exactly_the_declared_codes() -> None:
    """docs/failure-codes.md lists every code a check or the engine can emit, and no other."""
    documented = {code for code, _ in _doc_rows()}
    declared = _engine_codes()
    assert declared - documented == set(), "declared but not documented"
    assert documented - declared == set(), "documented but never declared"


def test_reference_check_column_names_the_declaring_checks() -> None:
    """Where the reference says which checks emit a code, it says what the declarations say."""
    compared = 0
    for code, row in _doc_rows():
        if "check" not in row or code.startswith("F-EVIDENCE-"):
            continue
        named = set(re.findall(r"`([a-z_]+)`", row["check"])) & set(SPECS)
        declaring = {name for name, spec in SPECS.items() if code in spec.codes}
        assert named == declaring, code
        compared += 1
    assert compared >= 15


def test_every_code_in_the_sources_is_declared() -> None:
    """Emitting an undeclared code fails here; codes are written whole so the scan sees them."""
    declared = _engine_codes()
    undeclared: list[str] = []
    built: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        found, pieces = _literals(path)
        rel = path.relative_to(ROOT)
        undeclared.extend(f"{rel}: {c}" for c in found if c not in declared)
        built.extend(f"{rel}: {p!r}" for p in pieces)
    assert undeclared == []
    assert built == [], "build codes as whole literals, not f-strings"


def test_each_check_module_emits_only_what_it_declares() -> None:
    """A module's code literals are its own declarations (a copied code is caught here)."""
    engine_codes = frozenset(evidence.CODES)
    used: set[str] = set()
    for module in {spec.factory.__module__ for spec in SPECS.values()}:
        own = {
            c for spec in SPECS.values() if spec.factory.__module__ == module for c in spec.codes
        }
        path = SRC.parent / (module.replace(".", "/") + ".py")
        found = set(_literals(path)[0])
        assert found - own - engine_codes == set(), module
        used |= found
    assert declared_codes() - used == set(), "declared but never emitted"


def test_every_check_type_is_documented_in_the_check_reference() -> None:
    """A check nobody can read about is a check nobody uses (docs/checks.md, the reference
    the rules guide points to)."""
    text = (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")
    assert [name for name in SPECS if f"`{name}`" not in text] == []


def test_the_shipped_schemas_are_valid_json_schemas() -> None:
    """Checked here once, not at every load (``_validator`` trusts them)."""
    import jsonschema

    from tracejudge.engine import cases, rules

    for doc in (rules.schema(), cases.schema()):
        jsonschema.validators.validator_for(doc).check_schema(doc)
