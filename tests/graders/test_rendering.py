"""What a grader's model is shown: a real dev-set run rendered, redacted and blind.

No language model runs here; these tests check the prompt text itself, the part of a
grader that is ours.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pytest

from tracejudge.graders.prompt import SYSTEM, identity, user_message
from tracejudge.graders.rendering import RENDERING_VERSION, RenderPolicy, render
from tracejudge.graders.spec import GraderSpec
from tracejudge.model.conversation import turns_of
from tracejudge.model.run import Run
from tracejudge.redaction import REDACTED, Redactor
from tracejudge.report.loading import load_runs

ROOT = Path(__file__).resolve().parents[2]
AIRLINE = ROOT / "examples" / "airline" / "tau-bench-dev" / "gpt-4o-airline.dev.json"
SNAPSHOT = Path(__file__).parent / "snapshots" / "airline-0-0.txt"
SPEC = GraderSpec.from_params(
    {
        "type": "grader",
        "model": "judge-1",
        "properties": [
            {
                "id": "claims_backed",
                "question": "Every action the agent says it took is backed by a successful "
                "tool result.",
            },
            {
                "id": "confirmed_before_write",
                "question": "Before each booking-changing call the user said yes to its details.",
            },
        ],
    }
)
USER_ID = r"\bmia_li_\d+\b"
"""A deployment's own redaction pattern (the user id), to show redaction in the snapshot."""


@functools.cache
def _runs() -> list[Run]:
    return load_runs([AIRLINE]).runs


def _run(run_id: str) -> Run:
    return next(r for r in _runs() if r.run_id == run_id)


def test_snapshot_of_what_the_model_is_shown() -> None:
    """Airline run 0-0 (tau-bench, GPT-4o): turns and tool calls in order, each line led
    by its span id; arguments shown once, on the executed call; the policy in the system
    message cut at its limit; the user id redacted by the deployment's pattern."""
    run = _run("0-0")
    evidence = render(run, RenderPolicy(redactor=Redactor([USER_ID])))
    shown = user_message(SPEC, evidence)
    assert shown == SNAPSHOT.read_text("utf-8")
    assert "mia_li_3668" not in shown
    assert evidence.redacted == shown.count(REDACTED) > 0
    # every span the text shows may be cited, and every model-call and tool span is shown
    for sid in evidence.span_ids:
        assert sid == run.root_span_id or f"[span {sid}]" in shown
    assert {s.span_id for s in run.steps if s.kind == "tool"} <= evidence.span_ids


def test_the_identity_names_model_prompt_and_rendering() -> None:
    """The prompt hash covers the fixed instructions and the rubric."""
    ident = identity(SPEC)
    assert (ident.provider, ident.model, ident.rendering_version) == (
        "openai",
        "judge-1",
        RENDERING_VERSION,
    )
    assert len(ident.prompt_hash) == 16
    assert '"answer": "yes" | "no" | "insufficient_evidence"' in SYSTEM
    reworded = GraderSpec.from_params(
        {"type": "grader", "model": "judge-1", "properties": [{"id": "x", "question": "q"}]}
    )
    assert identity(reworded).prompt_hash != ident.prompt_hash


def test_blind_to_variant_experiment_and_agent_version() -> None:
    """Label values are not rendered, and where a message quotes one it is masked."""
    run = _run("0-0")
    turns = turns_of(run)
    run.variant_id = "canary-v7"
    run.experiment_id = "exp-prompt-tweak"
    run.agent_version = "2.4.1-rc3"
    original = turns[1]
    try:
        turns[1] = dataclasses.replace(
            original, text="I was told canary-v7 (2.4.1-rc3, exp-prompt-tweak) is faster."
        )
        shown = user_message(SPEC, render(run))
    finally:
        turns[1] = original
        run.variant_id = run.experiment_id = run.agent_version = None
    for label in ("canary-v7", "exp-prompt-tweak", "2.4.1-rc3"):
        assert label not in shown
    assert "I was told [label] ([label], [label]) is faster." in shown
    assert "tau-bench-agent" not in shown  # no agent or model names either
    assert "gpt-4o" not in shown


def test_without_content_the_model_sees_only_the_shape() -> None:
    """``content=False`` (what --drop-content leaves): roles, tools, statuses, span ids."""
    run = _run("0-0")
    evidence = render(run, RenderPolicy(content=False))
    assert "mia_li_3668" not in evidence.text
    assert "Seattle" not in evidence.text
    assert "[span d0e87dbe51591170] tool get_user_details (ok) arguments: [content not shown]" in (
        evidence.text
    )
    assert evidence.span_ids == render(run).span_ids


def test_a_long_run_is_cut_from_the_middle_and_only_what_is_shown_may_be_cited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the limit lowered to 3,000 characters, run 0-0 keeps its first and last lines,
    says how many were cut, and the cut lines' span ids are no longer citable."""
    import tracejudge.graders.rendering as rendering

    run = _run("0-0")
    whole = render(run)
    monkeypatch.setattr(rendering, "MAX_EVIDENCE_CHARS", 3000)
    cut = render(run)
    assert len(cut.text) <= 3000 + 100
    lines = cut.text.splitlines()
    assert lines[0] == whole.text.splitlines()[0]
    assert lines[-1] == whole.text.splitlines()[-1]
    assert any(line.endswith("lines cut to fit the evidence limit]") for line in lines)
    assert cut.span_ids < whole.span_ids
    for sid in cut.span_ids - {run.root_span_id}:
        assert f"[span {sid}]" in cut.text
