"""Grader rules in ``tracejudge serve``: after the deterministic verdict, never before it.

A trace's deterministic verdict is stamped and forwarded as it always was; nothing here
runs before that or holds it. Once the decision stage has settled a trace (``grading.py``, on
the decided edge, after its payloads are enqueued) the runs a grader picks (its
``when``: by default the ones the deterministic checks left undecided) go to a small pool
of grader threads, and each grader's outcome follows as its own ``gen_ai.evaluation.result``
log record to ``forward_logs``, parented to the run's evaluated span: the form the GenAI
conventions give an evaluation made apart from the span it judges (the span has left).

Nothing waits on a model: the receivers, ``/healthz`` and the deterministic verdicts go on
while grader calls are open. Budget, collector config keys (``grader_budget.py``):

- ``grader_max_concurrent`` threads, so at most that many model calls are open at once;
- ``grader_calls_per_minute`` model calls in any 60 s of the collector's clock, shared by
  every grader. A run's calls (the samples of the graders that pick it) are taken when it
  is settled, all or none: a run they do not fit is ``not_evaluated`` with the reason
  ``budget`` at once, as is a run settled while the minute's tokens are spent or while as
  many runs as the minute's calls wait for a thread. A refused run is never rebuilt from
  its spans or rendered: that work, for calls that would not be made, took the CPU the
  deterministic verdicts need (``make bench-collector-graders``, docs/performance.md);
- ``grader_tokens_per_minute`` (0, the default: none): while the calls that answered in the
  last 60 s used that many tokens (input and output, as the providers report them), a call
  is not made either (``budget``);
- ``grader_run_deadline`` (300 s; 0: none): a run's samples are asked only within that long
  of its settling on the collector's clock; a sample after it (a run that waited for a
  thread, or whose earlier samples were slow) is ``not_evaluated`` with the reason
  ``deadline``. A call already open is not cut short: its own ``timeout_s`` bounds it.

With ``grader_traces`` each model call is a ``chat`` span of the collector's own service,
sent to the forward targets (``exporters/grader_spans.py``); a call a budget refused is no
call and has no span.

``not_evaluated`` is never a pass: the outcome is ``insufficient_evidence`` with an
``F-EVIDENCE-GRADER_NOT_EVALUATED`` finding. A provider that is down or answers 429 costs
one call's ``timeout_s`` on one grader thread (the SDKs make no retries), never the
pipeline. On stop, runs still waiting are ``not_evaluated`` with the reason ``shutdown``
(sent with the last log records), and the answers of calls still open are not awaited
(counted ``shutdown`` too).
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from tracejudge import semconv as sc
from tracejudge.collector.clock import Clock
from tracejudge.collector.codec.otlp import to_records
from tracejudge.collector.config import CollectorConfig, ConfigError
from tracejudge.collector.exporters.grader_spans import GraderSpans
from tracejudge.collector.processors.buffer import PendingTrace
from tracejudge.collector.processors.grader_budget import CallBudget, TokenBudget
from tracejudge.engine.verdict import RuleOutcome, Verdict
from tracejudge.graders.apply import GraderRule, apply_graders, not_graded, picked_ids
from tracejudge.graders.grade import Grader
from tracejudge.graders.providers import Completion, JudgeRequest, Provider, ProviderError
from tracejudge.graders.telemetry import traced
from tracejudge.model.build import build_runs
from tracejudge.model.conversation import merge_conversations
from tracejudge.model.log_events import with_serialized_logs
from tracejudge.model.run import Run

log = logging.getLogger("tracejudge.collector")

__all__ = ["GraderCounts", "GraderStage", "graders_for"]


@dataclass(slots=True)
class GraderCounts:
    """What the graders did (``/metrics`` ``graders``)."""

    runs: int = 0
    """Runs handed to the graders (picked by at least one grader's ``when``)."""
    calls: int = 0
    """Model calls made."""
    cached: int = 0
    """Samples answered from the answer cache (no call)."""
    outcomes: int = 0
    """Grader outcomes sent as ``gen_ai.evaluation.result`` records."""
    tokens: int = 0
    """Tokens the calls used, as the providers reported them (input and output)."""
    over_budget: dict[str, int] = field(default_factory=dict)
    """The ``budget`` samples of ``not_evaluated`` by which budget: ``calls`` and ``tokens``
    (a call not made), ``waiting`` (a run refused because as many runs as the minute's
    calls were waiting for a thread: each of its graders' samples)."""
    not_evaluated: dict[str, int] = field(default_factory=dict)
    """Samples with no answer, by reason (``budget``, ``shutdown``, ``rate_limited``,
    ``timeout``, ``connection``, ``http_<status>``, ``error``); a run whose call was open at
    stop counts one ``shutdown``."""
    agreement_sum: float = 0.0
    agreement_count: int = 0
    """Each graded outcome's agreement (its properties' lowest share of samples agreeing)."""


class _Budgeted:
    """A provider behind the stage's budget and stop flag (what every sample goes through)."""

    def __init__(self, inner: Provider, stage: GraderStage) -> None:
        self.inner = inner
        self.stage = stage

    def complete(self, request: JudgeRequest) -> Completion:
        stage = self.stage
        if stage.stopping.is_set():
            stage.count_missing("shutdown")
            raise ProviderError("shutdown")
        if stage.past_deadline():
            stage.count_missing("deadline")
            raise ProviderError("deadline")
        if stage.tokens.spent():  # the calls were taken when the run was settled
            stage.count_missing("budget")
            stage.count_over("tokens")
            raise ProviderError("budget")
        stage.count_call()
        try:
            reply = self.inner.complete(request)
        except ProviderError as exc:
            stage.count_missing(exc.reason)
            raise
        stage.tokens.add(reply.tokens)
        return reply


@dataclass(frozen=True, slots=True)
class _Job:
    fragments: tuple[bytes, ...]
    logs: tuple[bytes, ...]
    verdicts: tuple[Verdict, ...]
    due: float | None
    """The collector clock's reading after which no call is made for these runs."""


Emit = Callable[[Sequence[Verdict]], None]
"""Where grader outcomes go (``LogsIntake.evaluations``): verdicts holding only them."""


class GraderStage:
    """Grades settled runs on its own threads (``grading.Grading`` hands them over)."""

    def __init__(
        self,
        graders: Sequence[GraderRule],
        clock: Clock,
        emit: Emit,
        scrub: Callable[[Verdict], Verdict],
        max_concurrent: int,
        calls_per_minute: int,
        tokens_per_minute: int = 0,
        spans: GraderSpans | None = None,
        run_deadline: float = 0.0,
    ) -> None:
        self.stopping = threading.Event()
        self.clock = clock
        self.run_deadline = run_deadline
        """Seconds of the collector's clock from a run's settling after which no call is
        made for it (``grader_run_deadline``; 0: none)."""
        self._due = threading.local()
        self.budget = CallBudget(clock, calls_per_minute)
        self.tokens = TokenBudget(clock, tokens_per_minute)
        self.spans = spans
        """Where the calls' spans go (``grader_traces``); None: no spans."""
        runtime = spans.runtime if spans is not None else None
        self.graders = [
            GraderRule(
                g.rule,
                Grader(
                    g.grader.spec,
                    _Budgeted(traced(g.grader.provider, g.grader.spec, runtime), self),
                    g.grader.cache,
                    g.grader.policy,
                ),
            )
            for g in graders
        ]
        self.emit = emit
        self.scrub = scrub
        self.max_concurrent = max_concurrent
        self.max_waiting = calls_per_minute
        self.counts = GraderCounts()
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._waiting = 0
        """Jobs handed to the threads and not yet back (on the loop only)."""
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- the loop's side -----------------------------------------------------------------

    def decided(self, trace: PendingTrace, verdicts: Sequence[Verdict]) -> None:
        """A trace was settled (its verdict is on its way): grade the runs a grader picks."""
        picked = [(v, self._picking(v)) for v in verdicts]
        wanted = tuple(v for v, graders in picked if graders)
        if not wanted:
            return
        calls = sum(g.grader.spec.samples for _, graders in picked for g in graders)
        self.counts.runs += len(wanted)
        if self.stopping.is_set():
            self._not_graded(wanted, "shutdown")
            return
        if self._waiting >= self.max_waiting:
            self._not_graded(wanted, "budget", "waiting")
            return
        if self.tokens.spent():
            self._not_graded(wanted, "budget", "tokens")
            return
        if not self.budget.take(calls):
            self._not_graded(wanted, "budget", "calls")
            return
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            for k in range(self.max_concurrent):
                t = threading.Thread(target=self._work, name=f"tracejudge-grader-{k}", daemon=True)
                t.start()
                self._threads.append(t)
        self._waiting += 1
        due = self.clock.now() + self.run_deadline if self.run_deadline > 0 else None
        self._jobs.put(_Job(tuple(trace.fragments), tuple(trace.logs), wanted, due))

    def _picking(self, v: Verdict) -> list[GraderRule]:
        """The graders whose ``when`` picks ``v``'s run."""
        ids = {o.rule_id for o in v.outcomes}
        return [
            g
            for g in self.graders
            if g.rule.id in ids
            and picked_ids(g.grader.spec, g.rule.id, v.trace_id, v.root_span_id, v) is None
        ]

    def _not_graded(
        self, verdicts: Sequence[Verdict], reason: str, over: str | None = None
    ) -> None:
        """Send ``verdicts``' grader outcomes as ``not_evaluated`` for ``reason``; ``over``:
        the budget that refused them (``GraderCounts.over_budget``)."""
        out = []
        for v in verdicts:
            outcomes = not_graded(v, self.graders, reason)
            for g in self.graders:
                if any(o.rule_id == g.rule.id for o in outcomes):
                    self.count_missing(reason, g.grader.spec.samples)
                    if over is not None:
                        self.count_over(over, g.grader.spec.samples)
            out.append(_only(v, outcomes))
        self._send(out)

    def _done(self, verdicts: list[Verdict], lost: list[Verdict]) -> None:
        """A job is back: its outcomes, and the runs it could not grade (``error``)."""
        self._waiting -= 1
        if self.stopping.is_set():
            return  # counted by close(); its records would come after the last flush
        self._send(verdicts)
        if lost:
            self._not_graded(lost, "error")

    def _send(self, verdicts: Sequence[Verdict]) -> None:
        out = [self.scrub(v) for v in verdicts if v.outcomes]  # reasons quote the run
        for v in out:
            self.counts.outcomes += len(v.outcomes)
            for o in v.outcomes:
                agreement = dict(o.attributes).get(sc.TRACEJUDGE_GRADER_AGREEMENT)
                if isinstance(agreement, float) and o.result != "insufficient_evidence":
                    self.counts.agreement_sum += agreement
                    self.counts.agreement_count += 1
        if out:
            self.emit(out)

    def close(self) -> None:
        """Stop: runs still waiting are ``not_evaluated`` (``shutdown``) and sent now; the
        threads end after the call they are on (its answer is not awaited, and counted)."""
        self.stopping.set()
        if self.spans is not None:
            self.spans.close()  # calls ending later: their spans are dropped (counted)
        left: list[Verdict] = []
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                self._waiting -= 1
                left.extend(job.verdicts)
        open_calls = self._waiting
        if left:
            self._not_graded(left, "shutdown")
        if open_calls:
            self.count_missing("shutdown", open_calls)
            log.warning(
                "shutdown: %d runs being graded were left (their answers not awaited)", open_calls
            )
        for _ in self._threads:
            self._jobs.put(None)

    def snapshot(self) -> dict[str, Any]:
        """The ``graders`` entry of ``/metrics``."""
        c = self.counts
        with self._lock:
            missing, over = dict(c.not_evaluated), dict(c.over_budget)
            calls, cached = c.calls, c.cached
        return {
            "graders": [g.rule.id for g in self.graders],
            "max_concurrent": self.max_concurrent,
            "calls_per_minute": self.budget.per_minute,
            "tokens_per_minute": self.tokens.per_minute,
            "runs": c.runs,
            "waiting": self._waiting,
            "calls": calls,
            "tokens": self.tokens.total,
            "tokens_last_minute": self.tokens.last_minute(),
            "over_budget": over,
            "cached": cached,
            "outcomes": c.outcomes,
            "not_evaluated": missing,
            "agreement_mean": round(c.agreement_sum / c.agreement_count, 4)
            if c.agreement_count
            else None,
            "agreement_count": c.agreement_count,
            "traces": self.spans.snapshot() if self.spans is not None else None,
        }

    def prometheus(self) -> str:
        """The graders' counters in Prometheus text format (appended to ``/metrics``)."""
        s = self.snapshot()
        out = [
            "# HELP tracejudge_grader_calls_total Model calls made by grader rules.",
            "# TYPE tracejudge_grader_calls_total counter",
            f"tracejudge_grader_calls_total {s['calls']}",
            "# HELP tracejudge_grader_tokens_total Tokens grader calls used (input and output).",
            "# TYPE tracejudge_grader_tokens_total counter",
            f"tracejudge_grader_tokens_total {s['tokens']}",
            "# HELP tracejudge_grader_not_evaluated_total Grader samples not answered, by reason.",
            "# TYPE tracejudge_grader_not_evaluated_total counter",
        ]
        for reason, n in sorted(s["not_evaluated"].items()):
            out.append(f'tracejudge_grader_not_evaluated_total{{reason="{reason}"}} {n}')
        c = self.counts
        out += [
            "# HELP tracejudge_grader_agreement Agreement of graded outcomes (share of samples).",
            "# TYPE tracejudge_grader_agreement summary",
            f"tracejudge_grader_agreement_sum {c.agreement_sum!r}",
            f"tracejudge_grader_agreement_count {c.agreement_count}",
        ]
        return "\n".join(out) + "\n"

    def past_deadline(self) -> bool:
        """Whether the run this grader thread is grading is past its deadline."""
        due: float | None = getattr(self._due, "at", None)
        return due is not None and self.clock.now() > due

    def count_call(self) -> None:
        """One model call made (a grader thread)."""
        with self._lock:
            self.counts.calls += 1

    def count_over(self, budget: str, n: int = 1) -> None:
        """``n`` samples not answered for ``budget`` (``calls``, ``tokens``, ``waiting``)."""
        with self._lock:
            self.counts.over_budget[budget] = self.counts.over_budget.get(budget, 0) + n

    def count_missing(self, reason: str, n: int = 1) -> None:
        """``n`` samples with no answer for ``reason`` (any thread)."""
        with self._lock:
            missing = self.counts.not_evaluated
            missing[reason] = missing.get(reason, 0) + n

    # --- the threads' side ---------------------------------------------------------------

    def _work(self) -> None:
        loop = self._loop
        assert loop is not None
        while True:
            job = self._jobs.get()
            if job is None:
                return
            self._due.at = job.due
            try:
                out, lost = self._grade(job)
            except Exception:  # a bug must not end the thread; the verdict is out already
                log.exception("grading trace %s failed", job.verdicts[0].trace_id)
                out, lost = [], list(job.verdicts)
            if loop.is_closed():
                return
            loop.call_soon_threadsafe(self._done, out, lost)

    def _grade(self, job: _Job) -> tuple[list[Verdict], list[Verdict]]:
        """The graded outcomes of ``job``'s runs, and its verdicts whose run was not found
        again in the spans (not expected: the engine built the same runs)."""
        records = to_records([ResourceSpans.FromString(b) for b in job.fragments])
        if job.logs:
            records = with_serialized_logs(records, list(job.logs))
        runs: dict[tuple[str, str], Run] = {
            (r.trace_id, r.root_span_id): r for r in merge_conversations(build_runs(records))
        }
        ids = {g.rule.id for g in self.graders}
        out, lost = [], []
        for v in job.verdicts:
            run = runs.get((v.trace_id, v.root_span_id))
            if run is None:
                lost.append(v)
                continue
            after = apply_graders(v, run, self.graders)
            graded = [o for o in after.outcomes if o.rule_id in ids and o.attributes]
            for o in graded:
                self._count_cached(o)
            out.append(_only(after, graded))
        return out, lost

    def _count_cached(self, o: RuleOutcome) -> None:
        cached = dict(o.attributes).get(sc.TRACEJUDGE_GRADER_CACHED)
        if isinstance(cached, int) and cached:
            with self._lock:
                self.counts.cached += cached


def _only(v: Verdict, outcomes: list[RuleOutcome]) -> Verdict:
    """``v`` holding only ``outcomes`` (what its follow-up records carry)."""
    return replace(v, outcomes=outcomes, findings=[])


def graders_for(
    config: CollectorConfig, judge: object, env: Mapping[str, str] | None = None
) -> list[GraderRule]:
    """The rules file's graders, ready (keys read now); ``ConfigError`` naming the file,
    line and rule for each one that cannot be set up."""
    ruleset = getattr(judge, "ruleset", None)
    if ruleset is None or config.rules is None:
        return []
    from tracejudge.cli.graders import build_graders

    graders, problems = build_graders(
        ruleset, config.rules, os.environ if env is None else env, None
    )
    if problems:
        raise ConfigError(*problems)
    return graders
