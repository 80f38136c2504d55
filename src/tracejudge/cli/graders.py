"""Setting up a rules file's graders for ``tracejudge eval``: providers, keys, cache, and
where their calls' spans go (``graders/telemetry.py``: a ``Runtime``; none for ``serve``,
whose grader stage traces calls itself, inside its budget).

Every problem is said before any run is judged, naming the rules file, the line and the
rule: a missing key, an unknown provider, a cache directory that cannot be used.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import click
import yaml

from tracejudge import semconv as sc
from tracejudge.cli.errors import EXIT_INPUT
from tracejudge.engine.lines import line_of
from tracejudge.engine.rules import RuleSet
from tracejudge.engine.verdict import Verdict
from tracejudge.graders.apply import GraderRule, apply_graders, grader_specs
from tracejudge.graders.cache import AnswerCache
from tracejudge.graders.grade import Grader
from tracejudge.graders.providers import GraderConfigError, provider_for
from tracejudge.graders.telemetry import traced
from tracejudge.instrumentation import Runtime
from tracejudge.model.run import Run

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def build_graders(
    ruleset: RuleSet,
    rules_path: Path,
    env: Mapping[str, str],
    cache_dir: Path | None,
    runtime: Runtime | None = None,
) -> tuple[list[GraderRule], list[str]]:
    """The rule set's graders ready to run, and the problems (``file: line N: path: ...``);
    each model call a ``chat`` span on ``runtime`` (None: not traced)."""
    specs = grader_specs(ruleset)
    if not specs:
        return [], []
    cache = None
    problems: list[str] = []
    if cache_dir is not None:
        if cache_dir.exists() and not cache_dir.is_dir():
            problems.append(f"--grader-cache {cache_dir}: not a directory")
        cache = AnswerCache(cache_dir)
    root = None
    with contextlib.suppress(OSError, yaml.YAMLError):  # lines are a help, not a must
        root = yaml.compose(rules_path.read_text("utf-8"), Loader=_LOADER)
    out = []
    for rule, spec, path in specs:
        try:
            provider = provider_for(spec, env, rules_path.parent)
        except GraderConfigError as exc:
            line = line_of(root, path) if root is not None else None
            at = f"line {line}: " if line is not None else ""
            problems.append(f"{rules_path}: {at}{path} (rule {rule.id}): {exc}")
            continue
        out.append(GraderRule(rule, Grader(spec, traced(provider, spec, runtime), cache)))
    return out, problems


def grade_all(
    verdicts: list[Verdict], runs: list[Run], graders: list[GraderRule], workers: int
) -> list[Verdict]:
    """``apply_graders`` over every run, ``workers`` runs at a time (model calls wait on the
    network, not the CPU), in order."""
    if not graders:
        return verdicts

    def one(pair: tuple[Verdict, Run]) -> Verdict:
        verdict, run = pair
        try:
            return apply_graders(verdict, run, graders)
        except Exception as exc:  # a bug must not lose the deterministic verdict
            return _grader_error(verdict, exc)

    if workers <= 1:
        return [one(p) for p in zip(verdicts, runs, strict=True)]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grader") as pool:
        return list(pool.map(one, zip(verdicts, runs, strict=True)))


def _grader_error(verdict: Verdict, exc: Exception) -> Verdict:
    return replace(verdict, verdict="error", error=f"grader error: {type(exc).__name__}: {exc}")


def summary_lines(verdicts: list[Verdict], graders: list[GraderRule]) -> list[str]:
    """One line per grader: how many runs it judged, and what it could not decide."""
    lines = []
    for g in graders:
        rid = g.rule.id
        outcomes = [o for v in verdicts for o in v.outcomes if o.rule_id == rid]
        judged = [o for o in outcomes if o.attributes]
        labels = [
            str(p).rsplit("=", 1)[1]
            for o in judged
            for key, value in o.attributes
            if key == sc.TRACEJUDGE_GRADER_PROPERTIES
            for p in value
        ]
        cached = sum(
            int(value)
            for o in judged
            for key, value in o.attributes
            if key == sc.TRACEJUDGE_GRADER_CACHED
        )
        ident = g.grader.identity
        lines.append(
            f"grader {rid} ({ident.provider} {ident.model}, prompt {ident.prompt_hash}, "
            f"{ident.rendering_version}): judged {len(judged)} of {len(outcomes)} runs "
            f"(when: {g.grader.spec.when}); properties no {labels.count('no')}, "
            f"insufficient_evidence {labels.count('insufficient_evidence')}, "
            f"not_evaluated {labels.count('not_evaluated')}; {cached} samples from the cache"
        )
    return lines


def validation_lines(graders: list[GraderRule], records: Path) -> list[str]:
    """Per grader: its validation record's figures, or a warning that its current model,
    rubric and rendering have none (exits 2 on an unreadable records file)."""
    from tracejudge.validate.records import RecordsError, grader_version, load_records

    try:
        known = load_records(records)
    except RecordsError as exc:
        for error in exc.errors:
            click.echo(f"tracejudge eval: {error}", err=True)
        sys.exit(EXIT_INPUT)
    lines = []
    for g in graders:
        entry = grader_version(g.rule.id, g.grader.identity.version)
        found = known.get(entry)
        if found:
            last = found[-1]
            lines.append(
                f"grader {g.rule.id}: validated {last.recorded_at} on {last.labels}: "
                f"{last.summary()}"
            )
        else:
            lines.append(
                f"warning: grader {g.rule.id} ({g.grader.identity.version}) has no validation "
                f"in {records}: its false-pass and false-fail rates are unknown (a new model, "
                "rubric or rendering is a new version); run tracejudge validate --record"
            )
    return lines
