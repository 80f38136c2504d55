#!/usr/bin/env bash
# `make test` (and so CI): everything the README promises, set up from scratch where needed (the
# venv, the Go backends, the compiled wheel), in as little wall time as the cores allow.
#
# Only the end-to-end tests (marked `e2e`) need the Go backends, and building them cold is most
# of the work (Jaeger, the OpenTelemetry Collector and Prometheus: see scripts/build-backends.sh;
# helm and kube-check for the Helm chart: scripts/build-tools.sh). So:
#   1. scripts/build-backends.sh starts in the background at once (a no-op when they are built);
#   2. meanwhile, in order: venv, the browser for the report's test (Debian's chromium),
#      semconv, content-docs, config-docs and rules-schema freshness, ruff, mypy --strict, every test not
#      marked e2e (pytest-xdist, one worker per core), the mypyc-compiled wheel, the judging
#      suites on it;
#   3. then it waits for the backends and runs the e2e tests on both builds.
# When the backends are built already (a warm run), each build's suite runs whole, in one pytest.
# Each step prints its wall and CPU time. A failing step stops the run, but not the background build:
# the run waits for it to finish first, so the next run finds the backends built instead of starting
# the unfinished ones over (Ctrl-C, or a TERM, stops the build too).
#
#   COMPILED_TESTS   the suites run again on the compiled wheel (set by the Makefile)
#   TEST_WORKERS     pytest-xdist workers (default: auto, one per core; 0 runs in-process)
set -euo pipefail
cd "$(dirname "$0")/.."

WORKERS=${TEST_WORKERS:-auto}
COMPILED_TESTS=${COMPILED_TESTS:?set by the Makefile: the suites to run on the compiled wheel}
LOG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/tracejudge-test.XXXXXX")
BACKENDS_LOG=$LOG_DIR/backends.log
PY=.venv/bin/python
PYC=.venv-compiled/bin/python
XDIST=(-n "$WORKERS" --dist loadscope)
STARTED=$SECONDS
backends=""

say() { printf 'make test: %s\n' "$*" >&2; }

cpu_s() {  # CPU seconds of finished children, from what `times` printed into FILE
  tail -n 1 "$1" | awk '{ t = 0; for (i = 1; i <= NF; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%.0f", t }'
}

step() {  # step NAME COMMAND...: run it, print its wall time and CPU time
  local name=$1 t=$SECONDS
  shift
  say "$name"
  times >"$LOG_DIR/times.before"  # here, not in $(...): a subshell has no children
  "$@"
  times >"$LOG_DIR/times.after"
  say "$name: $((SECONDS - t))s, $(($(cpu_s "$LOG_DIR/times.after") - $(cpu_s "$LOG_DIR/times.before"))) CPU-s (total $((SECONDS - STARTED))s)"
}

passed() {
  times >"$LOG_DIR/times.after"
  say "passed in $((SECONDS - STARTED))s, $(cpu_s "$LOG_DIR/times.after") CPU-s in all"
  rm -rf "$LOG_DIR"
  exit 0
}

interrupted=0

stop_backends() {
  say "stopping the background backend build"
  kill -TERM -- "-$backends" 2>/dev/null || true
}

finish_backends() {  # the EXIT trap: a failed step lets the backend build finish; an interrupt stops it
  local status=$?
  if [ -z "$backends" ] || ! kill -0 "$backends" 2>/dev/null; then
    exit "$status"
  fi
  if [ "$interrupted" = 1 ]; then
    stop_backends
    exit "$status"
  fi
  say "a step failed (exit $status); letting the background backend build finish, so the next run does not start it over (log: $BACKENDS_LOG; Ctrl-C stops it)"
  trap 'stop_backends; exit 130' INT TERM
  if wait "$backends"; then
    say "backends: built; the next run's e2e tests will use them"
  else
    say "backends: the build failed too (log: $BACKENDS_LOG)"
  fi
  exit "$status"
}
trap 'interrupted=1; exit 130' INT TERM
trap finish_backends EXIT

if bash scripts/build-backends.sh --no-build >/dev/null 2>&1 && bash scripts/build-tools.sh --no-build >/dev/null 2>&1; then
  say "backends: built already"
else
  say "backends: building the missing ones of Jaeger, the OpenTelemetry Collector, Prometheus, helm and kube-check in the background (log: $BACKENDS_LOG)"
  # Its own process group, so that stopping it stops the go commands under it too. The
  # deployment tools (scripts/build-tools.sh) come after the backends: they share the Go cache.
  setsid bash -c 'bash scripts/build-backends.sh >/dev/null && bash scripts/build-tools.sh >/dev/null' 2>"$BACKENDS_LOG" &
  backends=$!
fi

step "venv" bash scripts/bootstrap.sh
# Debian's chromium and chromedriver for the HTML report's browser test (a no-op when installed)
step "browser" bash scripts/install-browser.sh
step "semconv, content docs, config docs, rules schema, lint, types" make --no-print-directory -s semconv-check content-docs-check config-docs-check rules-schema-check lint typecheck
if [ -z "$backends" ]; then
  step "tests, pure Python" "$PY" -m pytest "${XDIST[@]}"
  step "compiled wheel" bash scripts/build-compiled.sh
  # shellcheck disable=SC2086  # COMPILED_TESTS is a list of paths
  step "tests, compiled" "$PYC" -m pytest "${XDIST[@]}" --expect-compiled $COMPILED_TESTS
  passed
fi

step "tests, pure Python, not e2e" "$PY" -m pytest "${XDIST[@]}" -m "not e2e"
step "compiled wheel" bash scripts/build-compiled.sh
# shellcheck disable=SC2086  # COMPILED_TESTS is a list of paths
step "tests, compiled, not e2e" "$PYC" -m pytest "${XDIST[@]}" --expect-compiled -m "not e2e" $COMPILED_TESTS

say "backends: waiting for the build (log: $BACKENDS_LOG)"
t=$SECONDS
while kill -0 "$backends" 2>/dev/null; do
  sleep 5
  if [ $(((SECONDS - t) % 60)) -lt 5 ]; then say "backends: $(tail -n 1 "$BACKENDS_LOG")"; fi
done
if ! wait "$backends"; then
  backends=""
  tail -n 40 "$BACKENDS_LOG" >&2
  say "backends: the build failed (whole log: $BACKENDS_LOG)"
  exit 1
fi
backends=""
grep -E 'built .* in [0-9]+s' "$BACKENDS_LOG" >&2 || true
say "backends: ready after $((SECONDS - STARTED))s"

step "tests, pure Python, e2e" "$PY" -m pytest "${XDIST[@]}" -m e2e
# shellcheck disable=SC2086
step "tests, compiled, e2e" "$PYC" -m pytest "${XDIST[@]}" --expect-compiled -m e2e $COMPILED_TESTS
passed
