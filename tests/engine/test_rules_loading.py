"""Loading rules files: every error with its path, semantic checks, caps and CEL safety."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.engine.engine_runs import make_run, rules_text, tool
from tracejudge.engine import Engine, RulesError, load_rules, load_rules_text
from tracejudge.engine.compile import cel_macro_nesting
from tracejudge.engine.rules import MAX_FILE_BYTES, MAX_RULES, schema

BAD = """
version: 1
tools:
  lookup_order: {kind: lookup, entities: "orders[*].id", color: red}
rules:
  - id: a
    layer: trajectory
    check: {type: step_pattern, steps: [{kind: lookup}, {kind: mutat}]}
  - id: a
    layer: outcome
    check: {type: claim_evidence, claim: "(unclosed", tool: refund_api.create}
  - id: c
    layer: budgets
    check: {type: budget, max_steps: -1}
  - id: d
    layer: policy
    check: {type: cel, expr: "run.steps.exists(s, "}
"""


def _errors(text: str) -> list[str]:
    with pytest.raises(RulesError) as info:
        load_rules_text(text, source="bad.yaml")
    return info.value.errors


def test_schema_errors_are_all_listed_with_paths() -> None:
    """Authors fix a file in one pass only if every schema error is reported, with its path."""
    errors = _errors(BAD)
    assert (
        "rules[0].check.steps[1].kind: 'mutat' is not one of lookup, mutate, notify, approval"
        in errors
    )
    assert any(e.startswith("tools.lookup_order: Additional properties") for e in errors)
    assert "rules[2].layer: 'budgets' is not one of outcome, trajectory, policy, budget" in errors
    assert any(e.startswith("rules[2].check.max_steps:") for e in errors)
    assert len(errors) == 4


def test_semantic_errors_are_all_listed() -> None:
    """Duplicate ids, bad regexes, bad CEL and bad paths are caught at load, all at once."""
    text = BAD.replace("mutat", "mutate").replace("budgets", "budget").replace("-1", "1")
    text = text.replace(", color: red", "")
    errors = _errors(text)
    assert any(e.startswith("rules[1].id: duplicate rule id 'a'") for e in errors)
    assert any(e.startswith("rules[1].check.claim: bad regex") for e in errors)
    assert any(e.startswith("rules[3].check.expr: bad CEL") for e in errors)
    assert "rules[1].check.tool: 'refund_api.create' is not declared in tools" in errors
    assert len(errors) == 4
    path_err = _errors(rules_text({"type": "entity_binding", "tool": "x", "argument": "a[?"}))
    assert path_err[0].startswith("rules[0].check.argument: bad path")


def test_yaml_syntax_and_top_level() -> None:
    """Broken YAML names the line; a non-mapping document is a schema error, not a crash."""
    errors = _errors("version: 1\nrules: [\n")
    assert errors[0].startswith("line ")
    assert _errors("- just a list") == ["<root>: ['just a list'] is not of type 'object'"]


def test_size_caps() -> None:
    """Untrusted files are bounded: bytes, rule count, regex and CEL length."""
    assert "bytes, more than" in _errors("#" * (MAX_FILE_BYTES + 1))[0]
    many = {
        "version": 1,
        "rules": [
            {"id": f"r{i}", "layer": "budget", "check": {"type": "budget", "max_steps": 1}}
            for i in range(MAX_RULES + 1)
        ],
    }
    assert "rules, more than" in _errors(json.dumps(many))[0]
    long_rx = rules_text({"type": "claim_evidence", "claim": "a" * 1001, "tool": "t"})
    assert any("rules[0].check.claim" in e for e in _errors(long_rx))


def test_regexes_run_in_linear_time() -> None:
    """A catastrophic pattern cannot stall the engine: RE2 has no backtracking. Measured
    against the same run's judgement with a harmless pattern on the same text (the best of
    three each, and a wide margin): a backtracking engine would take longer than the test
    suite on ``(a+)+$`` over 100,000 characters, RE2 about as long as on ``a+$``."""
    answer = make_run([], "a" * 100_000 + "b")

    def best(claim: str) -> float:
        check = {"type": "claim_evidence", "claim": claim, "tool": "refund_api.create"}
        engine = Engine(load_rules_text(rules_text(check)))
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            assert engine.judge(answer).verdict == "pass"
            times.append(time.perf_counter() - t0)
        return min(times)

    assert best("(a+)+$") < 20 * best("a+$")
    check = {"type": "claim_evidence", "claim": "(a+)+$", "tool": "refund_api.create"}
    assert any("bad regex" in e for e in _errors(rules_text({**check, "claim": "(a)\\1"})))


def test_cel_nesting_cap() -> None:
    """Comprehensions nested four deep are rejected: cost would grow with steps^4."""
    assert cel_macro_nesting("run.steps.exists(a, a.ok)") == 1
    assert cel_macro_nesting("run.steps.all(a, run.steps.exists(b, b.name == 'x(' ))") == 2
    deep = (
        "run.steps.all(a, run.steps.all(b, run.steps.all(c, "
        "run.steps.exists(d, d.index > a.index))))"
    )
    errors = _errors(rules_text({"type": "cel", "expr": deep}))
    assert "nested 4 deep" in errors[0]
    undeclared = _errors(rules_text({"type": "cel", "expr": "open('/etc/passwd') == ''"}))
    assert "bad CEL" in undeclared[0]


_DEEP = "run.tools.all(a, run.tools.all(b, run.tools.all(c, run.tools.all(d, true))))"


@pytest.mark.parametrize(
    "expr",
    [
        _DEEP.replace("all(", "all ("),  # a space before the paren
        _DEEP.replace(".all(", "\n  .all\n("),  # line breaks around the dot and name
        _DEEP.replace("all(a,", "all // each a\n(a,"),  # a comment between name and paren
        "'''it's''' != '' && " + _DEEP,  # a quote inside a triple-quoted string
        "'\\\\' != '' && " + _DEEP,  # an escaped backslash ending a string
    ],
    ids=["space", "newlines", "comment", "triple-quote", "escaped-backslash"],
)
def test_cel_nesting_cap_cannot_be_hidden(expr: str) -> None:
    """Regression: spacing, comments or a string the scan misread let deeper nesting load.

    Each expression is valid CEL (it compiles without the cap), so without the cap it
    would load and then stop at cel-cpp's iteration budget on every run of 10+ tool calls.
    """
    assert cel_macro_nesting(expr) == 4
    errors = _errors(rules_text({"type": "cel", "expr": expr}))
    assert "nested 4 deep (at most 3)" in errors[0]
    assert "budget of 10,000 iterations" in errors[0]


def test_the_nesting_limit_is_set_by_the_cost_budget() -> None:
    """Issue 19 §2: 3 deep loads (20^3 = 8,000 iterations fit the budget on a run of 20
    calls) and is decided there; on a much longer run it stops at the budget and says so,
    never a pass."""
    expr = "run.tools.all(a, run.tools.all(b, run.tools.all(c, a.index + b.index + c.index >= 0)))"
    rs = load_rules_text(rules_text({"type": "cel", "expr": expr}))
    run = make_run([tool("send_email", {"to": f"u{k}"}, {"sent": True}) for k in range(20)])
    assert Engine(rs).judge(run).verdict == "pass"
    long = make_run([tool("send_email", {"to": f"u{k}"}, {"sent": True}) for k in range(40)])
    v = Engine(rs).judge(long)
    assert [f.code for f in v.findings] == ["F-EVIDENCE-CEL_ERROR"]


def test_lists_pair_by_index_and_values_bind_once() -> None:
    """Issue 19 §2: "each item can be exchanged for an item of the same product with
    different options" pairs item k with new item k: ``indices()`` gives the positions,
    ``cel.bind`` names a value once. A pairing that breaks fails; a call whose lists do
    not pair is a CEL error (insufficient evidence), not a pass."""
    expr = (
        "run.tools.all(t, t.name != 'exchange' || cel.bind(old, t.args.item_ids, "
        "indices(old).all(k, old[k] != t.args.new_item_ids[k])))"
    )
    rs = load_rules_text(rules_text({"type": "cel", "expr": expr}))

    def exchange(old: list[str], new: list[str]) -> Any:
        return make_run([tool("exchange", {"item_ids": old, "new_item_ids": new}, {"ok": True})])

    assert Engine(rs).judge(exchange(["1", "2"], ["3", "4"])).verdict == "pass"
    assert Engine(rs).judge(exchange(["1", "2"], ["3", "2"])).verdict == "fail"
    short = Engine(rs).judge(exchange(["1", "2"], ["3"]))
    assert [f.code for f in short.findings] == ["F-EVIDENCE-CEL_ERROR"]


def test_cel_nesting_ignores_macro_names_in_strings() -> None:
    """Text inside literals (any quoting, raw or bytes) is not code."""
    two = "run.tools.all(a, run.tools.all(b, true))"
    for lit in ("'.all(x, '", '".all(x, "', "r'.all('", "b'.all('", "'''.all(\n.all('''"):
        assert cel_macro_nesting(f"{lit} != '' && {two}") == 2, lit


def test_cel_iteration_budget_is_an_evidence_finding_with_a_reason() -> None:
    """Nesting within the cap can still pass cel-cpp's fixed budget on a long run: the rule
    is insufficient evidence that says why, never a crash, an error verdict or a pass."""
    check = {"type": "cel", "expr": "run.tools.all(a, run.tools.all(b, a.index + b.index >= 0))"}
    rs = load_rules_text(rules_text(check))
    run = make_run([tool("send_email", {"to": f"u{k}"}, {"sent": True}) for k in range(120)])
    v = Engine(rs).judge(run)
    assert v.verdict == "warn"
    assert [f.code for f in v.findings] == ["F-EVIDENCE-CEL_ERROR"]
    assert v.outcomes[0].result == "insufficient_evidence"
    assert "budget of 10,000 comprehension iterations" in v.findings[0].explanation
    small = make_run([tool("send_email", {"to": f"u{k}"}, {"sent": True}) for k in range(3)])
    assert Engine(rs).judge(small).verdict == "pass"  # within budget: decided


def test_version_is_a_content_hash(tmp_path: Path) -> None:
    """Verdicts cite the exact rules they were judged by."""
    text = rules_text({"type": "no_loop"})
    a = load_rules_text(text)
    b = load_rules_text(text + "\n")
    assert a.version.startswith("sha256:")
    assert a.version != b.version
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    assert load_rules(path).version == a.version


def test_unreadable_file_is_a_rules_error(tmp_path: Path) -> None:
    """A missing file is a clear error, not an OSError traceback."""
    with pytest.raises(RulesError) as info:
        load_rules(tmp_path / "nope.yaml")
    # a whole-file problem has no location inside the file: no "<file>" placeholder
    assert info.value.errors == ["cannot read: No such file or directory"]
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: cannot read: No such file or directory"


def test_schema_ships_in_the_package() -> None:
    """The schema others validate against (and editors can use) is package data."""
    doc = schema()
    assert doc["title"] == "tracejudge rules file"
    assert "baseline" in doc["$defs"]["check"]["properties"]["type"]["enum"]


def test_example_rules_file_loads() -> None:
    """The refund example is a real, valid rules file with at least the required coverage."""
    rs = load_rules(Path(__file__).resolve().parents[2] / "examples" / "refund" / "rules.yaml")
    types = {r.check_type for r in rs.rules}
    assert {
        "claim_evidence",
        "entity_binding",
        "step_pattern",
        "approval",
        "tool_access",
        "sensitive_data",
        "budget",
        "baseline",
    } <= types
    assert {r.layer for r in rs.rules} == {"outcome", "trajectory", "policy", "budget"}


def test_select_attributes() -> None:
    """Rules can be scoped by root attributes (equal or matching a regex)."""
    check = {"type": "forbidden_steps", "tools": ["send_email"]}
    run = make_run(
        [tool("send_email", {}, {})], root_attributes={"env": "prod", "region": "eu-west"}
    )
    sel = {"attributes": {"env": "prod"}, "attributes_match": {"region": "^eu-"}}
    engine = Engine(load_rules_text(rules_text(check, select=sel)))
    assert engine.judge(run).verdict == "fail"
    run.root_attributes["env"] = "staging"
    assert engine.judge(run).verdict == "pass"


def test_fast_regex_test_agrees_with_search() -> None:
    """The yes/no matcher used on hot paths answers exactly like RE2's public search."""
    from tracejudge.engine.compile import Compiler

    comp = Compiler()
    cases = {
        "(?i)refund (is|was) issued": ["Your REFUND was issued.", "no refund", ""],
        "\\bre_[A-Za-z0-9]{6,}": ["id re_ABC123 é", "re_short", "ünïcode re_ÀBC1234"],
        "^$": ["", "x"],
    }
    for pattern, texts in cases.items():
        rx = comp.regex("p", pattern)
        assert rx is not None
        assert rx.raw_test is not None
        for text in texts:
            assert rx.test(text) == (rx.search(text) is not None), (pattern, text)


def test_captures_pick_the_id_group() -> None:
    """Identifier captures: the ``id`` group, else group 1, else the match; UTF-8 safe."""
    from tracejudge.engine.compile import Compiler

    comp = Compiler()
    named = comp.regex("p", "refund (?P<id>re_\\w+)")
    first = comp.regex("p", "order #(\\d+)")
    whole = comp.regex("p", "re_[A-Z0-9]+")
    assert named is not None
    assert first is not None
    assert whole is not None
    assert named.captures("é refund re_A1, refund re_B2") == ["re_A1", "re_B2"]
    assert first.captures("order #12 and order #345") == ["12", "345"]
    assert whole.captures("ünï re_X9 re_Y8") == ["re_X9", "re_Y8"]
    assert whole.captures("nothing here") == []
    empty = comp.regex("p", "x*")
    assert empty is not None
    assert empty.captures("axx") == ["", "xx", ""]


def test_yaml_bombs_are_refused() -> None:
    """Aliases that expand exponentially, or absurd nesting, are clear errors, not hangs."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    lines += ["version: 1", "rules: []"]
    errors = _errors("\n".join(lines))  # a hang would meet pytest-timeout's guard
    assert "aliases expand" in errors[0]
    deep = "version: 1\nrules: " + "[" * 5_000 + "]" * 5_000
    assert _errors(deep)


def test_load_rules_takes_a_path_or_the_text() -> None:
    """load_rules(path_or_text): multi-line strings are rules text, others are paths."""
    text = rules_text({"type": "no_loop"}).replace(", ", ",\n")
    assert load_rules(text).version == load_rules_text(text).version
