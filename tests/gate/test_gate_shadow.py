"""The gate and shadow runs: never traffic, evidence for the candidate only when asked."""

from __future__ import annotations

import pytest

from tracejudge.engine.verdict import Verdict
from tracejudge.gate.params import ParamError, policy_from_query
from tracejudge.gate.recent import RecentVerdicts

T = 1_800_000_000.0


def _v(variant: str, *, shadow: bool = False) -> Verdict:
    return Verdict("ab" * 16, "01" * 8, "pass", {}, agent="support", variant=variant, shadow=shadow)


def test_shadow_parameter_is_checked() -> None:
    q = {"agent": "support", "variant": "v2"}
    assert policy_from_query(q).shadow is False
    assert policy_from_query({**q, "shadow": "include"}).shadow is True
    assert policy_from_query({**q, "shadow": "exclude"}).shadow is False
    with pytest.raises(ParamError, match="shadow: must be include or exclude") as err:
        policy_from_query({**q, "shadow": "yes"})
    assert err.value.name == "shadow"


def test_shadow_verdicts_never_enter_the_window_and_pairs_only_on_request() -> None:
    """A shadow's own verdict is skipped; paired shadows count for the candidate only with
    ``shadow=include`` (a hard divergence as a failed run), never for the baseline."""
    recent = RecentVerdicts()
    for _ in range(3):
        recent.add(_v("stable"), T)
    recent.add(_v("v2", shadow=True), T)
    assert len(recent) == 3
    recent.add_shadow(_v("v2", shadow=True), False, T)
    recent.add_shadow(_v("v2", shadow=True), True, T)
    recent.add_shadow(_v("stable", shadow=True), True, T)  # a shadow of the stable variant
    q = {"agent": "support", "variant": "v2", "min_runs": "1", "baseline": "stable"}
    assert recent.answer(q, T).candidate.runs == 0
    answer = recent.answer({**q, "shadow": "include"}, T)
    assert (answer.candidate.runs, answer.candidate.passes) == (2, 1)
    assert answer.baseline is not None
    assert (answer.baseline.runs, answer.baseline.passes) == (3, 3)
