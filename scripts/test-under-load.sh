#!/usr/bin/env bash
# Run tests on a busy machine: the check that no test depends on how fast this machine is.
#
#   scripts/test-under-load.sh [--burners N] [--beside 'COMMAND'] [--] [PYTEST ARGS...]
#
# Starts N CPU-burning processes (plain Python busy loops; default: 4 per core, so each core
# has ~5 runnable processes and the load average climbs towards what a shared box sees), and
# optionally COMMAND beside them (e.g. a second `make test`), then runs
# `.venv/bin/python -m pytest -p no:randomly PYTEST ARGS` (default: the whole suite, one
# worker per core). When pytest ends, the burners (and COMMAND) are stopped by their process
# ids, the load averages before and after are printed, and pytest's exit status is the
# script's. A test that fails here and passes alone bounds wall-clock time or sleeps in
# place of an event: tests/support/guards.py and tests/test_no_wall_clock_bounds.py say what
# to do instead.
#
# The machine is shared: prefer the modules a change touches to the whole suite, e.g.
#   scripts/test-under-load.sh -- -n 0 tests/collector/test_collector_timeouts.py
#
#   TEST_LOAD_BURNERS   default for --burners
set -euo pipefail
cd "$(dirname "$0")/.."

cores=$(nproc)
burners=${TEST_LOAD_BURNERS:-$((4 * cores))}
beside=""
while [ $# -gt 0 ]; do
  case "$1" in
    --burners) burners=$2; shift 2 ;;
    --beside) beside=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,20p' "$0" >&2; exit 0 ;;
    *) break ;;
  esac
done
if [ $# -eq 0 ]; then set -- -n auto --dist loadscope; fi

say() { printf 'test-under-load: %s\n' "$*" >&2; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

pids=()
stop_load() {
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap stop_load EXIT
trap 'exit 130' INT TERM

say "load average before: $(load) ($cores cores); starting $burners busy loops"
for _ in $(seq "$burners"); do
  setsid python3 -c 'while True: pass' &
  pids+=("$!")
done
if [ -n "$beside" ]; then
  say "beside it: $beside"
  setsid bash -c "$beside" >"${TMPDIR:-/tmp}/test-under-load.beside.log" 2>&1 &
  pids+=("$!")
fi
sleep 5  # let the burners take the cores before the tests start
say "load average at start: $(load); pytest -p no:randomly $*"
status=0
.venv/bin/python -m pytest -p no:randomly "$@" || status=$?
say "load average at the end: $(load); pytest exit status $status"
exit "$status"
