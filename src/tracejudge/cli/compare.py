"""``tracejudge compare``: a baseline's runs against a candidate's, pair by pair, on the
rubric of a rules file's grader rules (pairwise, ``tracejudge.graders.pairwise``).

Exit status: 0 compared, 1 with ``--fail-if-worse`` when the baseline is preferred on a
property by the sign test at ``--alpha``, 2 bad input (rules, keys, files, no pairs).
"""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click

from tracejudge.cli.eval import EXIT_INPUT, echo_errors
from tracejudge.graders.comparison import PropertyTally, pair_by_case, tally
from tracejudge.graders.pairwise import PairResult, PairwiseGrader
from tracejudge.model.run import Run
from tracejudge.report.loading import load_runs

EXIT_WORSE = 1


@click.command("compare")
@click.option(
    "--rules",
    "rules_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Rules file whose grader rules give the rubric.",
)
@click.option(
    "--baseline",
    "baseline_files",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path),
    help="A file of the baseline's runs (repeatable).",
)
@click.option(
    "--candidate",
    "candidate_files",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path),
    help="A file of the candidate's runs (repeatable).",
)
@click.option(
    "--grader",
    "grader_ids",
    multiple=True,
    help="Only this grader rule (repeatable); default: every grader rule in the file.",
)
@click.option(
    "--seed",
    default="tracejudge",
    show_default=True,
    help="Draws which run of each pair is shown first (reproducible per seed and pair).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=64),
    default=4,
    show_default=True,
    help="Pairs judged at once (model calls wait on the network).",
)
@click.option(
    "--fail-if-worse",
    is_flag=True,
    help="Exit 1 when the baseline is preferred on any property (sign test at --alpha).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(min=0.0, max=1.0, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def compare_command(
    rules_path: Path,
    baseline_files: tuple[Path, ...],
    candidate_files: tuple[Path, ...],
    grader_ids: tuple[str, ...],
    seed: str,
    workers: int,
    fail_if_worse: bool,
    alpha: float,
    fmt: str,
) -> None:
    """Compare a candidate's runs with a baseline's, each pair of runs of the same case
    judged side by side by the rules file's grader rules."""
    from tracejudge.cli.graders import build_graders
    from tracejudge.engine import RulesError, load_rules

    try:
        ruleset = load_rules(rules_path)
    except RulesError as exc:
        echo_errors("compare", [f"{rules_path}: {e}" for e in exc.errors], limit=None)
        sys.exit(EXIT_INPUT)
    except OSError as exc:
        echo_errors("compare", [f"{rules_path}: cannot read rules: {exc.strerror or exc}"])
        sys.exit(EXIT_INPUT)
    from tracejudge.graders.telemetry import judge_runtime

    # each model call a chat span to the global tracer provider: nowhere unless one is set
    graders, problems = build_graders(ruleset, rules_path, os.environ, None, judge_runtime())
    known = [g.rule.id for g in graders]
    problems += [f"--grader {g}: no grader rule of that id" for g in grader_ids if g not in known]
    if grader_ids:
        graders = [g for g in graders if g.rule.id in grader_ids]
    if not graders and not problems:
        problems.append(f"{rules_path}: no grader rules to compare with")
    if problems:
        echo_errors("compare", problems, limit=None)
        sys.exit(EXIT_INPUT)
    baseline = _runs(baseline_files, "baseline")
    candidate = _runs(candidate_files, "candidate")
    pairing = pair_by_case(baseline, candidate)
    if not pairing.pairs:
        echo_errors("compare", ["no pairs: no case id has runs on both sides (tracejudge.case.id)"])
        sys.exit(EXIT_INPUT)
    report: list[dict[str, Any]] = []
    worse = False
    for g in graders:
        pairwise = PairwiseGrader(g.grader.spec, g.grader.provider, seed)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="compare") as pool:
            bases, cands = zip(*pairing.pairs, strict=True)
            results = list(pool.map(pairwise.compare, bases, cands))
        tallies = tally([p.id for p in g.grader.spec.properties], results)
        worse |= any(
            t.counts["baseline"] > t.counts["candidate"] and t.p_value < alpha for t in tallies
        )
        report.append(_grader_doc(g.rule.id, pairwise, tallies, pairing.pairs, results))
    doc = {
        "pairs": len(pairing.pairs),
        "unpaired": {
            "baseline": [_name(r) for r in pairing.unpaired_baseline],
            "candidate": [_name(r) for r in pairing.unpaired_candidate],
        },
        "seed": seed,
        "graders": report,
    }
    click.echo(json.dumps(doc, indent=1) if fmt == "json" else _text(doc, alpha))
    sys.exit(EXIT_WORSE if fail_if_worse and worse else 0)


def _runs(files: tuple[Path, ...], side: str) -> list[Run]:
    loaded = load_runs(list(files))
    echo_errors("compare", [f"{side}: {e}" for e in loaded.errors])
    if loaded.errors and not loaded.runs:
        sys.exit(EXIT_INPUT)
    return loaded.runs


def _name(run: Run) -> str:
    return str(run.run_id or f"{run.trace_id}/{run.root_span_id}")


def _grader_doc(
    rule_id: str,
    grader: PairwiseGrader,
    tallies: list[PropertyTally],
    pairs: tuple[tuple[Run, Run], ...],
    results: list[PairResult],
) -> dict[str, Any]:
    ident = grader.identity
    return {
        "rule_id": rule_id,
        "identity": {
            "provider": ident.provider,
            "model": ident.model,
            "prompt_hash": ident.prompt_hash,
            "rendering_version": ident.rendering_version,
        },
        "properties": [
            {
                "id": t.id,
                **t.counts,
                "candidate_share": None if t.decided == 0 else t.candidate_share.rate,
                "candidate_share_95": [t.candidate_share.low, t.candidate_share.high],
                "p_value": t.p_value,
            }
            for t in tallies
        ],
        "pairs": [
            {
                "case_id": b.case_id,
                "baseline": _name(b),
                "candidate": _name(c),
                "candidate_first": r.candidate_first,
                "picks": {
                    p.id: {"pick": p.pick, "agreement": p.agreement, "reason": p.reason}
                    for p in r.picks
                },
            }
            for (b, c), r in zip(pairs, results, strict=True)
        ],
    }


def _text(doc: dict[str, Any], alpha: float) -> str:
    unpaired = doc["unpaired"]
    lines = [
        f"compare: {doc['pairs']} pairs of runs of the same case; unpaired: "
        f"{len(unpaired['baseline'])} baseline, {len(unpaired['candidate'])} candidate"
    ]
    head = ("property", "candidate", "baseline", "tie", "insufficient", "not_evaluated")
    for g in doc["graders"]:
        ident = g["identity"]
        lines.append(
            f"grader {g['rule_id']} ({ident['provider']} {ident['model']}, prompt "
            f"{ident['prompt_hash']}, {ident['rendering_version']}, seed {doc['seed']})"
        )
        rows = [(*head, "candidate share [95%]", "sign test p")]
        for p in g["properties"]:
            decided = p["candidate"] + p["baseline"]
            low, high = p["candidate_share_95"]
            share = (
                "-"
                if decided == 0
                else f"{p['candidate']}/{decided} {100 * p['candidate_share']:.1f}% "
                f"[{100 * low:.1f}%-{100 * high:.1f}%]"
            )
            verdict = ""
            if p["p_value"] < alpha:
                verdict = (
                    " (baseline better)"
                    if p["baseline"] > p["candidate"]
                    else " (candidate better)"
                )
            rows.append(
                (
                    p["id"],
                    str(p["candidate"]),
                    str(p["baseline"]),
                    str(p["tie"]),
                    str(p["insufficient_evidence"]),
                    str(p["not_evaluated"]),
                    share,
                    f"{p['p_value']:.3g}{verdict}",
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines += [
            "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in rows
        ]
    return "\n".join(lines)
