#!/usr/bin/env bash
# The engine's cost against an earlier commit, in one run: bench_engine.py of this tree and
# of BASE's sources, alternating ROUNDS times on the same interpreter (pure Python; the
# compiled build is `make bench-engine`'s second line). Prints each round's line per tree.
#
#   bench/ab_engine.sh BASE [ROUNDS] [SECONDS]     (BASE: a commit; default 3 rounds of 2 s)
#
# BASE is checked out in a temporary worktree, removed at the end.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
base=${1:?usage: bench/ab_engine.sh BASE [ROUNDS] [SECONDS]}
rounds=${2:-3}
seconds=${3:-2}
py="$repo/.venv/bin/python"
wt="$(mktemp -d)/base"
git -C "$repo" worktree add -q --detach "$wt" "$base"
trap 'git -C "$repo" worktree remove --force "$wt"' EXIT
echo "ab_engine: this tree ($(git -C "$repo" rev-parse --short HEAD)) against $(git -C "$wt" rev-parse --short HEAD), $rounds rounds"
for round in $(seq 1 "$rounds"); do
  for side in head base; do
    tree=$repo
    [ "$side" = base ] && tree=$wt
    echo "round $round, $side:"
    (cd "$tree" && PYTHONPATH="$tree/src" "$py" bench/bench_engine.py --seconds "$seconds" --sizes 10,100)
  done
done
