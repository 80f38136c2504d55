#!/usr/bin/env bash
# The release check "a fresh clone passes `make test` three times in a row while another
# `make test` runs beside it": ROUNDS rounds (default 3), each cloning this repository's
# committed HEAD twice into a scratch directory and running `.ci/run` in both clones at once.
# Stops at the first round in which either run fails; each run's log is kept.
#
#   scripts/ci-side-by-side.sh [ROUNDS] [WORKDIR]     (WORKDIR default: a new mktemp -d)
#
# Prints one line per round (each clone's exit status and wall seconds); exit 0 when every
# round passed. Backends built with Go are shared through ~/.cache/tracejudge as in CI.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
rounds=${1:-3}
work=${2:-$(mktemp -d)}
echo "ci-side-by-side: $(git -C "$repo" log --oneline -1), $rounds round(s), logs in $work"
for round in $(seq 1 "$rounds"); do
  pids=()
  for side in a b; do
    dir="$work/r$round$side"
    rm -rf "$dir" && git clone -q "$repo" "$dir"
    (
      start=$(date +%s)
      rc=0
      (cd "$dir" && bash .ci/run) >"$dir.log" 2>&1 || rc=$?
      echo "rc=$rc wall=$(($(date +%s) - start))s" >>"$dir.log"
      exit "$rc"
    ) &
    pids+=($!)
  done
  failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  echo "round $round: a $(tail -1 "$work/r${round}a.log") | b $(tail -1 "$work/r${round}b.log")"
  if [ "$failed" != 0 ]; then
    echo "ci-side-by-side: round $round failed; see $work/r${round}[ab].log" >&2
    exit 1
  fi
done
echo "ci-side-by-side: all $rounds round(s) passed"
