"""One grader on one run: render, ask the model ``samples`` times (or read the cache),
read each answer, vote."""

from __future__ import annotations

from dataclasses import dataclass

from tracejudge.graders.answer import Answer, not_evaluated, parse_answer
from tracejudge.graders.cache import AnswerCache, cache_key
from tracejudge.graders.prompt import SYSTEM, Identity, identity, user_message
from tracejudge.graders.providers import (
    Completion,
    JudgedRun,
    JudgeRequest,
    Provider,
    ProviderError,
)
from tracejudge.graders.rendering import Evidence, RenderPolicy, render
from tracejudge.graders.spec import GraderSpec
from tracejudge.graders.vote import PropertyVote, vote
from tracejudge.model.run import Run
from tracejudge.redaction import Redactor


@dataclass(frozen=True, slots=True)
class GraderResult:
    """What one grader concluded about one run."""

    identity: Identity
    votes: tuple[PropertyVote, ...]
    samples: int
    cached: int
    """Samples read from the cache (no model call)."""
    dropped: int
    """Citations of span ids not in the run, dropped, over all samples."""
    evidence_digest: str


class Grader:
    """A grader ready to judge: spec, provider, optional cache, rendering policy."""

    def __init__(
        self,
        spec: GraderSpec,
        provider: Provider,
        cache: AnswerCache | None = None,
        policy: RenderPolicy | None = None,
    ) -> None:
        self.spec = spec
        self.identity = identity(spec)
        self.provider = provider
        self.cache = cache
        self.policy = policy or RenderPolicy(spec.content, Redactor(spec.redact))

    def grade(self, run: Run) -> GraderResult:
        """Judge ``run``. Never raises for the model's sake: an error is ``not_evaluated``."""
        evidence = render(run, self.policy)
        request = JudgeRequest(
            self.spec.model,
            SYSTEM,
            user_message(self.spec, evidence),
            self.spec.temperature,
            self.spec.max_tokens,
            (JudgedRun(run.trace_id, run.root_span_id),),
        )
        answers: list[Answer] = []
        cached = 0
        for k in range(self.spec.samples):
            answer, hit = self._sample(k, request, evidence)
            answers.append(answer)
            cached += hit
        return GraderResult(
            self.identity,
            vote(self.spec.properties, answers),
            len(answers),
            cached,
            sum(a.dropped for a in answers),
            evidence.digest,
        )

    def _sample(self, k: int, request: JudgeRequest, evidence: Evidence) -> tuple[Answer, int]:
        rubric = self.spec.properties
        key = cache_key(
            self.identity, self.spec.temperature, self.spec.max_tokens, k, evidence.digest
        )
        if self.cache is not None:
            text = self.cache.get(key)
            if text is not None:
                return parse_answer(text, rubric, evidence.span_ids), 1
        try:
            reply = self.provider.complete(request)
        except ProviderError as exc:
            return not_evaluated(rubric, exc.reason), 0
        problem = unreadable(reply)
        if problem is not None:
            return not_evaluated(rubric, problem), 0
        assert reply.text is not None
        answer = parse_answer(reply.text, rubric, evidence.span_ids)
        if self.cache is not None and answer.not_evaluated is None:
            self.cache.put(key, self.identity.version, reply.text)
        return answer, 0


def unreadable(reply: Completion) -> str | None:
    """Why a reply holds no answer to read (a refusal, a filtered or empty reply)."""
    if reply.refusal:
        return f"refusal: {' '.join(reply.refusal.split())[:200]}"
    if reply.finish_reason == "content_filter":
        return "refusal: content_filter"
    if not reply.text or not reply.text.strip():
        return "malformed: empty answer"
    return None
