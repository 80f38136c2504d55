"""What a grader costs in input: the size of the evidence a judge model is shown.

Run: ``.venv/bin/python bench/bench_grader_evidence.py``. Renders every run of the two dev
sets (tau-bench airline, tau2-bench retail) as a grader would (``evidence/1``, default
redaction, content shown) and prints, per set, the characters per sample (the fixed
instructions included, the rubric not): median, 90th percentile, maximum and total, and
how many runs each set's rules leave undecided (what ``when: undecided``, the default,
would send to the model). About four characters make a token.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from tracejudge.engine import Engine, load_rules
from tracejudge.graders.prompt import SYSTEM
from tracejudge.graders.rendering import RENDERING_VERSION, render
from tracejudge.report.loading import load_runs

ROOT = Path(__file__).resolve().parents[1]
SETS = {
    "airline": (
        ROOT / "examples" / "airline",
        [ROOT / "examples" / "airline" / "tau-bench-dev" / "gpt-4o-airline.dev.json"],
    ),
    "retail": (
        ROOT / "examples" / "retail",
        sorted((ROOT / "examples" / "retail" / "tau2-retail-dev" / "sims").glob("*.json.gz")),
    ),
}


def main() -> int:
    """Print one line per dev set."""
    print(f"rendering {RENDERING_VERSION}; characters per sample (about 4 per token)")
    for name, (folder, files) in SETS.items():
        runs = load_runs(files).runs
        engine = Engine(load_rules(folder / "rules.yaml"))
        undecided = sum(1 for r in runs if any(f.undecided for f in engine.judge(r).findings))
        sizes = sorted(len(render(r).text) + len(SYSTEM) for r in runs)
        p90 = sizes[int(0.9 * len(sizes))]
        print(
            f"{name}: {len(runs)} runs, median {statistics.median(sizes):,.0f}, p90 {p90:,}, "
            f"max {sizes[-1]:,}, total {sum(sizes):,}; undecided by the rules: {undecided}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
