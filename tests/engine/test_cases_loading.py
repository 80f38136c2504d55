"""Loading cases files: YAML and JSON lines, every error with its line and case, size caps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracejudge.engine import CasesError, load_cases, load_cases_text, load_rules_text
from tracejudge.engine import cases as cases_module

GOOD_YAML = """\
version: 1
cases:
  - id: cancel-1
    description: cancel the reservation, tell the refund
    expected_actions:
      - tool: cancel_reservation
        arguments: {reservation_id: ABC123, reason: no}
    must_communicate: ["refund", {regex: "\\\\$\\\\d+"}]
  - id: book-1
    ordered: true
    expected_actions:
      - tool: book_reservation
        arguments: {date: 2024-05-20, insurance: no, nonfree_baggages: 0, ok: true}
        argument_match: {amount: {tolerance: 0.01}, note: ignore}
    forbidden_actions: [{tool: cancel_reservation}]
    expected_state: [{tool: book_reservation, path: status, equals: confirmed}]
"""


def _errors(text: str, fmt: str = "yaml") -> list[str]:
    with pytest.raises(CasesError) as info:
        load_cases_text(text, "cases.yaml", fmt)  # type: ignore[arg-type]
    return info.value.errors


def test_a_valid_file_compiles_every_case() -> None:
    cs = load_cases_text(GOOD_YAML, "cases.yaml")
    assert len(cs) == 2
    assert "cancel-1" in cs
    assert cs.version.startswith("sha256:")
    book = cs.get("book-1")
    assert book is not None
    assert book.ordered is True
    assert book.line == 9
    assert book.expected is not None
    assert book.expected[0].per_argument["amount"].amount == 0.01
    assert cs.get("missing") is None


def test_dates_and_yes_no_stay_strings() -> None:
    """YAML 1.1 would make ``no`` false and ``2024-05-20`` a date: neither equals what a
    tool received as JSON, so the loader keeps them as written (only true/false are bools)."""
    book = load_cases_text(GOOD_YAML).get("book-1")
    assert book is not None
    assert book.expected is not None
    args = book.expected[0].arguments
    assert args == {"date": "2024-05-20", "insurance": "no", "nonfree_baggages": 0, "ok": True}
    cancel = load_cases_text(GOOD_YAML).get("cancel-1")
    assert cancel is not None
    assert cancel.expected is not None
    assert cancel.expected[0].arguments == {"reservation_id": "ABC123", "reason": "no"}


def test_schema_errors_name_line_case_and_field() -> None:
    text = """\
version: 1
cases:
  - id: ok
    expected_actions: []
  - id: x
    expected_actions:
      - {tool: a}
      - {tool: b}
      - {tool: c, arguments: [1, 2]}
"""
    assert _errors(text) == [
        "line 5: case 'x' expected_actions[2].arguments: [1, 2] is not of type 'object'"
    ]


def test_every_problem_is_listed_at_once() -> None:
    text = """\
version: 1
cases:
  - id: a
    expected_actions: [{tool: t, match: fuzzy}]
  - id: a
    must_communicate: [{regex: "(unclosed"}]
  - id: b
  - expected_actions: []
  - id: c
    expected_state: [{tool: t, path: "a[", equals: 1}]
"""
    errors = _errors(text)
    assert (
        "line 3: case 'a' expected_actions[0].match: 'fuzzy' is not one of exact, subset" in errors
    )
    assert "line 5: case 'a': duplicate case id (first at line 3)" in errors
    assert any(e.startswith("line 7: case 'b': no expectations") for e in errors)
    assert "line 8: cases[3]: 'id' is a required property" in errors
    assert any(
        e.startswith("line 9: case 'c' expected_state[0].path: bad path 'a['") for e in errors
    )
    assert len(errors) == 5
    assert errors == sorted(errors, key=lambda e: int(e.split(":")[0].split()[1]))


def test_bad_regex_is_named_with_its_case() -> None:
    text = 'version: 1\ncases:\n  - {id: r, must_communicate: [{regex: "(unclosed"}]}\n'
    [error] = _errors(text)
    assert error.startswith("line 3: case 'r' must_communicate[0].regex: bad regex '(unclosed'")


def test_bad_cel_in_expected_state() -> None:
    text = (
        'version: 1\ncases:\n  - {id: s, expected_state: [{tool: t, path: a, cel: "value =="}]}\n'
    )
    [error] = _errors(text)
    assert error.startswith("line 3: case 's' expected_state[0].cel: bad CEL")


def test_top_level_errors() -> None:
    assert _errors("cases: []\n") == ["<root>: 'version' is a required property"]
    assert _errors("version: 2\ncases: []\n") == ["version: 2 is not one of 1"]
    assert _errors("- a\n") == ["<root>: ['a'] is not of type 'object'"]


def test_yaml_syntax_error_has_a_position() -> None:
    [error] = _errors("version: 1\ncases: [\n")
    assert error.startswith("line 3, column 1: YAML:")


def test_json_lines() -> None:
    lines = [
        json.dumps({"id": "a", "expected_actions": [{"tool": "t", "arguments": {"x": 1}}]}),
        "",
        json.dumps({"id": "b", "must_communicate": ["hi"]}),
    ]
    cs = load_cases_text("\n".join(lines), "cases.jsonl", "jsonl")
    assert len(cs) == 2
    b = cs.get("b")
    assert b is not None
    assert b.line == 3


def test_json_lines_errors_name_the_line() -> None:
    text = "\n".join(
        [
            json.dumps({"id": "a", "expected_actions": []}),
            "{not json",
            json.dumps({"id": "b", "expected_actions": [{"tool": "t", "severity": "maybe"}]}),
            json.dumps({"id": "a", "expected_actions": []}),
        ]
    )
    errors = _errors(text, "jsonl")
    assert errors[0].startswith("line 2: not JSON:")
    assert (
        "line 3: case 'b' expected_actions[0].severity: 'maybe' is not one of fail, warn" in errors
    )
    assert "line 4: case 'a': duplicate case id (first at line 1)" in errors


def test_files_pick_the_format_by_suffix_and_name_themselves(tmp_path: Path) -> None:
    jsonl = tmp_path / "cases.jsonl"
    jsonl.write_text(json.dumps({"id": "a", "expected_actions": []}) + "\n")
    assert len(load_cases(jsonl)) == 1
    yml = tmp_path / "cases.yaml"
    yml.write_text(GOOD_YAML)
    assert load_cases(yml).source == str(yml)
    with pytest.raises(CasesError) as info:
        load_cases(tmp_path / "nope.yaml")
    assert str(tmp_path / "nope.yaml") in str(info.value)
    assert info.value.errors[0].startswith("<file>: cannot read")


def test_size_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cases_module, "MAX_CASES_FILE_BYTES", 100)
    assert _errors(GOOD_YAML)[0].startswith("<file>: ")
    monkeypatch.setattr(cases_module, "MAX_CASES_FILE_BYTES", 1 << 20)
    monkeypatch.setattr(cases_module, "MAX_CASES", 1)
    assert _errors(GOOD_YAML) == ["cases: 2 cases, more than 1"]


def test_alias_bombs_are_bounded() -> None:
    """Aliases can expand a small file exponentially; the loader counts before validating."""
    bomb = ["version: 1", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for k in range(1, 8):
        bomb.append(f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 10) + "]")
    bomb.append("cases: []")
    [error] = _errors("\n".join(bomb) + "\n")
    assert "once aliases expand" in error


def test_tool_warnings_against_the_rules_tools() -> None:
    cs = load_cases_text(GOOD_YAML, "cases.yaml")
    tools = load_rules_text(
        json.dumps(
            {
                "version": 1,
                "tools": {
                    "cancel_reservation": {"kind": "mutate"},
                    "book_reservations": {"kind": "mutate"},
                },
                "rules": [{"id": "x", "layer": "trajectory", "check": {"type": "no_loop"}}],
            }
        )
    ).tools
    assert cs.tool_warnings(tools) == [
        "line 9: case 'book-1' expected_actions[0].tool: 'book_reservation' is not declared in "
        "the rules' tools (did you mean 'book_reservations'?)"
    ]
    assert cs.tool_warnings({}) == []


def test_the_schema_ships_in_the_package() -> None:
    doc = cases_module.schema()
    assert doc["$defs"]["case"]["additionalProperties"] is False
