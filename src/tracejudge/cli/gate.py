"""``tracejudge gate``: the canary decision over verdict JSON lines, for CI and scripts.

Exit status: 0 pass, 1 fail, 3 inconclusive (not enough runs, or an interval that
straddles the bar), 2 bad input. The same decision ``GET /v1/gate`` serves; see
docs/baselines-and-canary.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tracejudge.cli.eval import EXIT_INPUT, echo_errors
from tracejudge.cli.terminal import text_or_json
from tracejudge.gate import GatePolicy, decide, run_of
from tracejudge.gate.params import parse_duration
from tracejudge.report.records import VerdictFileError, read_all

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_INCONCLUSIVE = 3
_EXITS = {"pass": EXIT_PASS, "fail": EXIT_FAIL, "inconclusive": EXIT_INCONCLUSIVE}
_DEFAULTS = GatePolicy("-", "-")


def _window(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("gate")
@click.argument("verdicts", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--agent", required=True, help="The agent (gen_ai.agent.name) to gate.")
@click.option("--variant", required=True, help="The candidate variant (e.g. canary).")
@click.option(
    "--baseline",
    default=None,
    help="The stable variant to compare with; without it, --threshold is the bar.",
)
@click.option(
    "--window",
    default=None,
    callback=_window,
    help="Only runs decided within this long before the newest one (10m, 2h); needs "
    "the collector's decided_at field.",
)
@click.option(
    "--min-runs",
    type=click.IntRange(min=1),
    default=_DEFAULTS.min_runs,
    show_default=True,
    help="Fewer candidate (or baseline) runs than this: inconclusive.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0),
    default=_DEFAULTS.threshold,
    show_default=True,
    help="The absolute pass-rate bar, without --baseline.",
)
@click.option(
    "--margin",
    type=click.FloatRange(0.0, 1.0),
    default=_DEFAULTS.margin,
    show_default=True,
    help="Non-inferiority margin: the bar is the baseline's pass rate minus this.",
)
@text_or_json("the GET /v1/gate answer.")
def gate_command(
    verdicts: tuple[Path, ...],
    agent: str,
    variant: str,
    baseline: str | None,
    window: float | None,
    min_runs: int,
    threshold: float,
    margin: float,
    fmt: str,
) -> None:
    """Pass, fail or hold a candidate VARIANT on its judged runs (verdict JSON lines).

    Any hard-gate policy failure fails at once; fewer than --min-runs runs is
    inconclusive; otherwise the Wilson 95% interval of the pass rate decides: pass when
    its lower bound clears the bar, fail when its upper bound is below it.
    """
    if baseline is not None and baseline == variant:
        raise click.BadParameter("must differ from --variant", param_hint="--baseline")
    try:
        records = read_all(verdicts)
    except VerdictFileError as exc:
        echo_errors("gate", exc.errors)
        sys.exit(EXIT_INPUT)
    policy = GatePolicy(agent, variant, baseline, window, min_runs, threshold, margin)
    runs = [run_of(r) for r in records if not r.shadow]  # shadows are not user traffic
    if window is not None and not any(r.time is not None for r in runs):
        echo_errors(
            "gate",
            ["--window: no verdict line has a decided_at time (lines from the collector do)"],
        )
        sys.exit(EXIT_INPUT)
    result = decide(runs, runs, policy)
    if fmt == "json":
        click.echo(json.dumps(result.to_dict()))
    else:
        click.echo(f"{result.decision}: {result.reason}")
    sys.exit(_EXITS[result.decision])
