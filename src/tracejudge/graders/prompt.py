"""The fixed prompt: instructions, the answer's JSON shape, the rubric, the evidence.

``PROMPT_VERSION`` names the template; a grader's prompt hash covers the template, the
rubric and the instructions, so changing any word the judge reads is a new grader version.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from tracejudge.graders.rendering import RENDERING_VERSION, Evidence
from tracejudge.graders.spec import GraderSpec

PROMPT_VERSION = "rubric/1"

SYSTEM = """You are an auditor of an AI agent's recorded run. You judge only from the \
evidence given: the run's messages and tool calls, each line starting with the id of \
the span that recorded it. For each property, answer "yes" if the evidence shows it holds, \
"no" if the evidence shows it does not, or "insufficient_evidence" if the evidence cannot \
decide. A "yes" or "no" must cite the span ids of the lines that show it; cite only ids \
that appear in the evidence. Judge each property on its own. Do not reward fluent or \
confident wording: only what the tool results and messages show counts.

Answer with one JSON object and nothing else, of exactly this shape:
{"properties": [{"id": "<property id>", "answer": "yes" | "no" | "insufficient_evidence", \
"span_ids": ["<span id>", ...], "reason": "<one sentence>"}]}
with one entry per property, in the order given."""


@dataclass(frozen=True, slots=True)
class Identity:
    """What a grader's outcome says about who judged: changing any of it is a new version."""

    provider: str
    model: str
    prompt_hash: str
    rendering_version: str

    @property
    def version(self) -> str:
        """One string for the whole identity (the cache key's prefix)."""
        return f"{self.provider}/{self.model}/{self.prompt_hash}/{self.rendering_version}"


def identity(spec: GraderSpec) -> Identity:
    """The grader's identity: provider, model, prompt hash, rendering version."""
    h = hashlib.sha256()
    h.update(f"{PROMPT_VERSION}\x1e{SYSTEM}\x1e{spec.rubric_hash()}".encode())
    return Identity(spec.provider, spec.model, h.hexdigest()[:16], RENDERING_VERSION)


def user_message(spec: GraderSpec, evidence: Evidence) -> str:
    """The rubric, the optional instructions, then the evidence."""
    rubric = [{"id": p.id, "property": p.question} for p in spec.properties]
    parts = []
    if spec.instructions:
        parts.append(f"Context for judging:\n{spec.instructions}")
    parts.append("Properties:\n" + json.dumps(rubric, ensure_ascii=False, indent=1))
    parts.append("Evidence:\n" + evidence.text)
    return "\n\n".join(parts)
