#!/usr/bin/env bash
# Build the real trace backends that tracejudge's end-to-end tests run against,
# from the Go module proxy at pinned versions, into a cache OUTSIDE the repo.
#
#   scripts/build-backends.sh [--no-build] [all|jaeger|otelcol|prometheus|promtool]...  (default: all)
#
#   --no-build   only report: exit 3 if a requested binary is not built yet.
#
# - Jaeger v2 (`jaeger`, the OTel-collector-based v2 line; in-memory storage,
#   OTLP receiver, query API). Jaeger v2 releases are tagged v2.X.Y, but the Go
#   module keeps the v1 path, so release v2.13.0 is module version v1.76.0.
#   Its go.mod has a replace directive, so `go install mod@version` refuses it;
#   we `go mod download` the module and `go build ./cmd/jaeger` inside a copy of
#   it, i.e. with upstream's own go.mod/go.sum. The UI is the placeholder page
#   (no npm build); the HTTP query APIs work.
# - OpenTelemetry Collector, assembled by the OpenTelemetry Collector Builder
#   (ocb) from collector/otelcol/builder-config.yaml.
# - Prometheus (`prometheus` and `promtool`, for the verdict metrics, the shipped
#   recording/alert rules and the PromQL the canary docs give). Prometheus 3.x
#   releases are tagged v3.X.Y but the Go module is versioned v0.3XX.Y; like
#   Jaeger we `go mod download` the module and build both commands inside a copy
#   (upstream's go.mod/go.sum; GOWORK=off: the zip's go.work names modules the
#   zip does not hold). No `builtinassets` tag, so no npm build: the web
#   UI is absent, the HTTP API and rule evaluation are complete.
#
# Grafana Tempo is NOT built here: it is AGPL-3.0 licensed, which this project
# does not take in; the compose file collector/compose/docker-compose.tempo.yaml
# runs Tempo's published image instead.
#
# Binaries land in ${TRACEJUDGE_CACHE_DIR:-$HOME/.cache/tracejudge}/bin with the
# version in the file name; GOPATH/GOMODCACHE/GOCACHE live under the same cache
# dir so a fresh machine works. When the binaries are there the script does no
# Go work at all and only prints their paths.
#
# stdout: one `name=/abs/path` line per requested backend (for tooling, e.g.
#         tests/e2e/backends.py). Everything else goes to stderr.
# Cold build on the project's 2-core machine (empty cache, Go module downloads
# included; CPU time is the stable number, wall time depends on other load):
#   jaeger  ~6 min CPU: 4.5 min wall when idle, 16 min with 4x oversubscription
#   otelcol ~5.5 min CPU (incl. ocb): ~4 min wall when idle, 8 min loaded
#   prometheus + promtool 737 CPU-s (~12 min CPU; its own module downloads included, but
#     built with Jaeger's and otelcol's module and build caches already warm): 1692 s wall
#     alone, with 7 other agents loading the machine (load average 10-21). It adds at least
#     that CPU time to a cold `make test`.
# They build side by side (each log line says which); each reports its wall and CPU time.
# Measured side by side in a cold `make test` (scripts/test.sh runs the Python suites at the
# same time) with other work loading the machine (load average 8-14): otelcol 1119 s, jaeger
# 1361 s wall. They share GOMODCACHE and GOCACHE, but few compiled packages: Jaeger v2.13.0 is
# built on collector v0.140.0, our collector is v0.161.0, so only ~40 of the collector's ~1,100
# packages are the same module version in both.
# Cached: ~10 ms (41 ms measured with all three cached). Cache size: 9.3 GB with all three
# built (du; Go module + build caches), binaries 170 MB before Prometheus, +193 MB for it.
set -euo pipefail

# ---- pinned versions (keep in sync with collector/otelcol/builder-config.yaml
#      and the image tags in collector/compose/) ---------------------------------
JAEGER_VERSION="v2.13.0"           # Jaeger release (binary / image tag 2.13.0)
JAEGER_MODULE_VERSION="v1.76.0"    # Go module tag of that same release
OTELCOL_VERSION="v0.161.0"         # collector core/contrib + builder release
PROMETHEUS_MODULE_VERSION="v0.316.0"  # Go module tag of the Prometheus 3.x release we test against

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${TRACEJUDGE_CACHE_DIR:-$HOME/.cache/tracejudge}"
BIN_DIR="$CACHE_DIR/bin"
JAEGER_BIN="$BIN_DIR/jaeger-$JAEGER_VERSION"
OTELCOL_BIN="$BIN_DIR/otelcol-tracejudge-$OTELCOL_VERSION"
OCB_BIN="$BIN_DIR/ocb-$OTELCOL_VERSION"
PROMETHEUS_BIN="$BIN_DIR/prometheus-$PROMETHEUS_MODULE_VERSION"
PROMTOOL_BIN="$BIN_DIR/promtool-$PROMETHEUS_MODULE_VERSION"
# Both commands are built by one `go build`; the stamp says both landed.
PROMETHEUS_STAMP="$BIN_DIR/prometheus-$PROMETHEUS_MODULE_VERSION.ok"
MANIFEST="$REPO_ROOT/collector/otelcol/builder-config.yaml"

log() { printf 'build-backends: %s\n' "$*" >&2; }
die() { printf 'build-backends: ERROR: %s\n' "$*" >&2; exit 1; }
# CPU seconds (user + sys) of a shell's finished children, from what `times` printed into FILE:
# a build's cost apart from the machine's other load, which only stretches its wall time.
# (`times` has to run in the building shell itself; a $(...) subshell has no children.)
cpu_s() {
  tail -n 1 "$1" | awk '{ t = 0; for (i = 1; i <= NF; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%.0f", t }'
}

want_jaeger=0
want_otelcol=0
want_prometheus=0
no_build=0
for arg in "$@"; do
  case "$arg" in
    --no-build) no_build=1 ;;
    all) want_jaeger=1; want_otelcol=1; want_prometheus=1 ;;
    jaeger) want_jaeger=1 ;;
    otelcol) want_otelcol=1 ;;
    prometheus|promtool) want_prometheus=1 ;;  # one build makes both
    -h|--help) sed -n '2,50p' "${BASH_SOURCE[0]}" >&2; exit 0 ;;
    *) die "unknown argument '$arg' (expected: --no-build, all, jaeger, otelcol, prometheus, promtool)" ;;
  esac
done
if [ "$want_jaeger" = 0 ] && [ "$want_otelcol" = 0 ] && [ "$want_prometheus" = 0 ]; then
  want_jaeger=1; want_otelcol=1; want_prometheus=1
fi

# The manifest's hash is part of the collector's "is it built" check, so editing
# the component list rebuilds it (the version alone would not notice).
otelcol_stamp() {
  local sum
  sum="$(sha256sum "$MANIFEST" | cut -c1-16)"
  printf '%s\n' "$OTELCOL_BIN.$sum.ok"
}

have_jaeger() { [ -x "$JAEGER_BIN" ]; }
have_otelcol() { [ -x "$OTELCOL_BIN" ] && [ -f "$(otelcol_stamp)" ]; }
have_prometheus() { [ -x "$PROMETHEUS_BIN" ] && [ -x "$PROMTOOL_BIN" ] && [ -f "$PROMETHEUS_STAMP" ]; }

print_paths() {
  if [ "$want_jaeger" = 1 ]; then printf 'jaeger=%s\n' "$JAEGER_BIN"; fi
  if [ "$want_otelcol" = 1 ]; then printf 'otelcol=%s\n' "$OTELCOL_BIN"; fi
  if [ "$want_prometheus" = 1 ]; then
    printf 'prometheus=%s\n' "$PROMETHEUS_BIN"
    printf 'promtool=%s\n' "$PROMTOOL_BIN"
  fi
}

needs_build() {
  { [ "$want_jaeger" = 1 ] && ! have_jaeger; } || { [ "$want_otelcol" = 1 ] && ! have_otelcol; } \
    || { [ "$want_prometheus" = 1 ] && ! have_prometheus; }
}

# ---- fast path: nothing to do ---------------------------------------------------
if ! needs_build; then
  print_paths
  exit 0
fi

if [ "$no_build" = 1 ]; then
  log "not built yet (run scripts/build-backends.sh without --no-build): $(
    { [ "$want_jaeger" = 1 ] && ! have_jaeger && printf '%s ' "$JAEGER_BIN"; } || true
    { [ "$want_otelcol" = 1 ] && ! have_otelcol && printf '%s ' "$OTELCOL_BIN"; } || true
    { [ "$want_prometheus" = 1 ] && ! have_prometheus && printf '%s ' "$PROMETHEUS_BIN $PROMTOOL_BIN"; } || true
  )"
  exit 3
fi

# ---- slow path: build -------------------------------------------------------------
command -v go >/dev/null 2>&1 || die "the 'go' command is not on PATH; install Go >= 1.26 to build the e2e backends"
[ -f "$MANIFEST" ] || die "builder manifest not found: $MANIFEST"

mkdir -p "$BIN_DIR"
export GOPATH="$CACHE_DIR/go"
export GOMODCACHE="$CACHE_DIR/go/pkg/mod"
export GOCACHE="$CACHE_DIR/go-build"
export GOTOOLCHAIN=local          # never download another Go toolchain
export GOFLAGS="-buildvcs=false"  # sources come from module zips, not git
export CGO_ENABLED=0
export GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}"
log "go: $(go version) ; cache: $CACHE_DIR"

# Serialise concurrent callers (e.g. parallel test workers); re-check afterwards.
exec 9>"$CACHE_DIR/build.lock"
if ! flock -n 9; then
  log "another build is running; waiting for $CACHE_DIR/build.lock"
  flock 9
fi

WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/tracejudge-backends.XXXXXX")"
cleanup() { chmod -R u+w "$WORK_DIR" 2>/dev/null || true; rm -rf "$WORK_DIR"; }
trap cleanup EXIT

build_jaeger() {
  local start src dir
  start=$SECONDS
  log "jaeger $JAEGER_VERSION: downloading module github.com/jaegertracing/jaeger@$JAEGER_MODULE_VERSION"
  dir="$(go mod download -json "github.com/jaegertracing/jaeger@$JAEGER_MODULE_VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')" \
    || die "jaeger: go mod download failed"
  [ -n "$dir" ] && [ -d "$dir" ] || die "jaeger: module directory not found after download"
  src="$WORK_DIR/jaeger"
  cp -R "$dir" "$src"
  chmod -R u+w "$src"
  log "jaeger $JAEGER_VERSION: go build ./cmd/jaeger (takes several minutes cold)"
  (
    cd "$src"
    go build -trimpath \
      -ldflags "-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=$JAEGER_VERSION -X github.com/jaegertracing/jaeger/internal/version.commitSHA=module-$JAEGER_MODULE_VERSION" \
      -o "$JAEGER_BIN.tmp" ./cmd/jaeger
  ) || die "jaeger: go build failed (see output above)"
  mv -f "$JAEGER_BIN.tmp" "$JAEGER_BIN"
  times >"$WORK_DIR/jaeger.times"
  log "jaeger $JAEGER_VERSION: built $JAEGER_BIN in $((SECONDS - start))s ($(cpu_s "$WORK_DIR/jaeger.times") CPU-s)"
}

build_otelcol() {
  local start out stamp
  start=$SECONDS
  if [ ! -x "$OCB_BIN" ]; then
    log "ocb $OTELCOL_VERSION: go install go.opentelemetry.io/collector/cmd/builder@$OTELCOL_VERSION"
    GOBIN="$WORK_DIR/gobin" go install "go.opentelemetry.io/collector/cmd/builder@$OTELCOL_VERSION" \
      || die "ocb: go install failed"
    mv -f "$WORK_DIR/gobin/builder" "$OCB_BIN"
  fi
  out="$WORK_DIR/otelcol"
  # Point dist.output_path at the temp dir so nothing is written in the repo.
  sed "s|^\([[:space:]]*output_path:\).*|\1 $out|" "$MANIFEST" >"$WORK_DIR/builder-config.yaml"
  grep -q "output_path: $out\$" "$WORK_DIR/builder-config.yaml" \
    || die "otelcol: could not set dist.output_path in a copy of $MANIFEST"
  log "otelcol $OTELCOL_VERSION: ocb --config $MANIFEST (takes several minutes cold)"
  "$OCB_BIN" --config "$WORK_DIR/builder-config.yaml" >&2 \
    || die "otelcol: the collector builder failed (see output above)"
  [ -x "$out/otelcol-tracejudge" ] || die "otelcol: builder finished but $out/otelcol-tracejudge is missing"
  mv -f "$out/otelcol-tracejudge" "$OTELCOL_BIN"
  rm -f "$OTELCOL_BIN".*.ok
  stamp="$(otelcol_stamp)"
  : >"$stamp"
  times >"$WORK_DIR/otelcol.times"
  log "otelcol $OTELCOL_VERSION: built $OTELCOL_BIN in $((SECONDS - start))s ($(cpu_s "$WORK_DIR/otelcol.times") CPU-s)"
}

build_prometheus() {
  local start src dir out
  start=$SECONDS
  log "prometheus $PROMETHEUS_MODULE_VERSION: downloading module github.com/prometheus/prometheus@$PROMETHEUS_MODULE_VERSION"
  dir="$(go mod download -json "github.com/prometheus/prometheus@$PROMETHEUS_MODULE_VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')" \
    || die "prometheus: go mod download failed"
  [ -n "$dir" ] && [ -d "$dir" ] || die "prometheus: module directory not found after download"
  src="$WORK_DIR/prometheus"
  out="$WORK_DIR/prometheus-bin"
  cp -R "$dir" "$src"
  chmod -R u+w "$src"
  mkdir -p "$out"
  log "prometheus $PROMETHEUS_MODULE_VERSION: go build ./cmd/prometheus ./cmd/promtool (takes several minutes cold)"
  (
    cd "$src"
    # The module zip carries upstream's go.work, whose other modules the zip lacks.
    GOWORK=off go build -trimpath \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=module-$PROMETHEUS_MODULE_VERSION" \
      -o "$out/" ./cmd/prometheus ./cmd/promtool
  ) || die "prometheus: go build failed (see output above)"
  [ -x "$out/prometheus" ] && [ -x "$out/promtool" ] || die "prometheus: build finished but a binary is missing"
  rm -f "$PROMETHEUS_STAMP"
  mv -f "$out/prometheus" "$PROMETHEUS_BIN"
  mv -f "$out/promtool" "$PROMTOOL_BIN"
  : >"$PROMETHEUS_STAMP"
  times >"$WORK_DIR/prometheus.times"
  log "prometheus $PROMETHEUS_MODULE_VERSION: built $PROMETHEUS_BIN and $PROMTOOL_BIN in $((SECONDS - start))s ($(cpu_s "$WORK_DIR/prometheus.times") CPU-s)"
}

# The builds run side by side: each leaves a core idle for long stretches (module
# downloads, the single-threaded link of a >100 MB binary) that the other one fills. They
# share GOMODCACHE and GOCACHE; the go command locks both for concurrent use.
pids=()
names=()
if [ "$want_jaeger" = 1 ] && ! have_jaeger; then
  (build_jaeger 2>&1 | sed -u "s/^/[jaeger] /" >&2) &
  pids+=("$!"); names+=(jaeger)
fi
if [ "$want_otelcol" = 1 ] && ! have_otelcol; then
  (build_otelcol 2>&1 | sed -u "s/^/[otelcol] /" >&2) &
  pids+=("$!"); names+=(otelcol)
fi
if [ "$want_prometheus" = 1 ] && ! have_prometheus; then
  (build_prometheus 2>&1 | sed -u "s/^/[prometheus] /" >&2) &
  pids+=("$!"); names+=(prometheus)
fi
failed=()
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done
[ "${#failed[@]}" -eq 0 ] || die "build failed: ${failed[*]} (see the [name] lines above)"
print_paths
