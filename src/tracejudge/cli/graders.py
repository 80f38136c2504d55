"""Setting up a rules file's graders for ``tracejudge eval``: providers, keys, cache.

Every problem is said before any run is judged, naming the rules file, the line and the
rule: a missing key, an unknown provider, a cache directory that cannot be used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

import yaml

from tracejudge.engine.lines import line_of
from tracejudge.engine.rules import RuleSet
from tracejudge.graders.apply import GraderRule, grader_specs
from tracejudge.graders.cache import AnswerCache
from tracejudge.graders.grade import Grader
from tracejudge.graders.providers import GraderConfigError, provider_for

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def build_graders(
    ruleset: RuleSet, rules_path: Path, env: Mapping[str, str], cache_dir: Path | None
) -> tuple[list[GraderRule], list[str]]:
    """The rule set's graders ready to run, and the problems (``file: line N: path: ...``)."""
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
            provider = provider_for(spec, env)
        except GraderConfigError as exc:
            line = line_of(root, path) if root is not None else None
            at = f"line {line}: " if line is not None else ""
            problems.append(f"{rules_path}: {at}{path} (rule {rule.id}): {exc}")
            continue
        out.append(GraderRule(rule, Grader(spec, provider, cache)))
    return out, problems
