"""An error verdict keeps its run's identity: agent, case, variant and agent version.

The canary gate counts an ``error`` verdict as a run that did not pass, and the verdict
metrics count it under its variant; both need the variant on the error verdict too, or
a candidate that cannot even be judged would look better than it is.
"""

from __future__ import annotations

import dataclasses

from tests.engine.engine_runs import make_run
from tests.engine.test_engine import _engine
from tracejudge.engine.context import Report, RunContext


class Crashing:
    """A ``Check`` with a bug (a fake: the shipped checks are tested not to raise)."""

    def evaluate(self, ctx: RunContext, report: Report) -> None:
        raise TypeError("boom")


def test_error_verdict_keeps_the_runs_identity() -> None:
    engine = _engine()
    first = engine.ruleset.rules[0]
    engine.ruleset = dataclasses.replace(
        engine.ruleset, rules=(dataclasses.replace(first, check=Crashing()),)
    )
    run = make_run([])
    run.variant_id = "canary"
    run.agent_version = "1.5.0"
    v = engine.judge(run)
    assert v.verdict == "error"
    assert (v.agent, v.case_id, v.variant, v.agent_version) == (
        run.agent_name,
        run.case_id,
        "canary",
        "1.5.0",
    )
