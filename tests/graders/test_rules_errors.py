"""A grader rule written wrong is an error naming the file, the line and the key.

No model is involved: these are rules-file loading errors.
"""

from __future__ import annotations

import pytest

from tracejudge.engine import RulesError, load_rules_text
from tracejudge.engine.checks.grader import GraderCheck

HEAD = """version: 1
rules:
  - id: fine
    layer: outcome
    check: {type: no_loop}
  - id: judged
    layer: outcome
    check:
      type: grader
      model: judge-1
"""


def _errors(tail: str) -> list[str]:
    with pytest.raises(RulesError) as info:
        load_rules_text(HEAD + tail, "rules.yaml")
    return info.value.errors


def test_a_rubric_with_no_properties() -> None:
    assert _errors("      properties: []\n") == [
        "line 11: rules[1].check.properties: a grader needs at least one property (a yes/no "
        "question with an observable anchor, such as 'every claimed action is backed by a "
        "successful tool result')"
    ]


def test_an_unknown_provider() -> None:
    tail = "      provider: gemini\n      properties: [{id: a, question: q}]\n"
    assert _errors(tail) == [
        "line 11: rules[1].check.provider: 'gemini' is not one of openai, anthropic"
    ]


def test_duplicate_properties_and_a_sample_without_fraction() -> None:
    tail = (
        "      when: sampled\n"
        "      properties:\n"
        "        - {id: a, question: q}\n"
        "        - {id: a, question: r}\n"
    )
    assert _errors(tail) == [
        "line 14: rules[1].check.properties[1].id: duplicate property id 'a'",
        "line 9: rules[1].check.fraction: when: sampled needs a fraction (0 < fraction <= 1)",
    ]


def test_a_bad_redaction_pattern() -> None:
    tail = "      redact: ['(unclosed']\n      properties: [{id: a, question: q}]\n"
    (error,) = _errors(tail)
    assert error.startswith("line 11: rules[1].check.redact[0]: invalid regular expression: ")


def test_a_good_grader_loads_and_other_rules_errors_are_unchanged() -> None:
    good = HEAD + "      properties: [{id: a, question: q}]\n"
    rules = load_rules_text(good, "rules.yaml")
    check = rules.rules[1].check
    assert isinstance(check, GraderCheck)
    assert check.path == "rules[1].check"
    with pytest.raises(RulesError) as info:
        load_rules_text(good.replace("no_loop", "no_such_check"), "rules.yaml")
    assert info.value.errors
    assert not any(e.startswith("line ") for e in info.value.errors)
