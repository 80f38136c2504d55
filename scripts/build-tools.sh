#!/usr/bin/env bash
# Build the deployment tools the Helm chart's tests run, from the Go module proxy at pinned
# versions, into the same cache OUTSIDE the repo as scripts/build-backends.sh:
#
#   scripts/build-tools.sh [--no-build] [all|helm|kube-check]...  (default: all)
#
# - helm v3 (helm.sh/helm/v3/cmd/helm): `helm lint --strict` checks the chart and its values
#   against values.schema.json; `helm template` renders it.
# - kube-check (scripts/kube-check, ours): strictly decodes the rendered manifests into the
#   real Kubernetes API types (k8s.io/api) and the Prometheus Operator's ServiceMonitor, so
#   an unknown field or a wrong type fails without a cluster. Rebuilt when its sources change.
#
# stdout: one `name=/abs/path` line per requested tool. Everything else goes to stderr.
# --no-build: only report; exit 3 if a requested tool is not built yet.
# Cold build on the 2-core machine, loaded by other builds: kube-check ~35 CPU-s (6 min
# wall); helm see the log line it prints (wall and CPU seconds). Cached: ~10 ms.
set -euo pipefail

HELM_VERSION="v3.22.0"

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${TRACEJUDGE_CACHE_DIR:-$HOME/.cache/tracejudge}"
BIN_DIR="$CACHE_DIR/bin"
HELM_BIN="$BIN_DIR/helm-$HELM_VERSION"
KUBE_SRC="$REPO_ROOT/scripts/kube-check"

log() { printf 'build-tools: %s\n' "$*" >&2; }
die() { printf 'build-tools: ERROR: %s\n' "$*" >&2; exit 1; }

kube_bin() {
  local sum
  sum="$(cat "$KUBE_SRC/main.go" "$KUBE_SRC/go.mod" "$KUBE_SRC/go.sum" | sha256sum | cut -c1-16)"
  printf '%s\n' "$BIN_DIR/kube-check-$sum"
}
KUBE_BIN="$(kube_bin)"

want_helm=0
want_kube=0
no_build=0
for arg in "$@"; do
  case "$arg" in
    --no-build) no_build=1 ;;
    all) want_helm=1; want_kube=1 ;;
    helm) want_helm=1 ;;
    kube-check) want_kube=1 ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" >&2; exit 0 ;;
    *) die "unknown argument '$arg' (expected: --no-build, all, helm, kube-check)" ;;
  esac
done
if [ "$want_helm" = 0 ] && [ "$want_kube" = 0 ]; then want_helm=1; want_kube=1; fi

print_paths() {
  if [ "$want_helm" = 1 ]; then printf 'helm=%s\n' "$HELM_BIN"; fi
  if [ "$want_kube" = 1 ]; then printf 'kube-check=%s\n' "$KUBE_BIN"; fi
}
missing() {
  { [ "$want_helm" = 1 ] && [ ! -x "$HELM_BIN" ] && printf '%s ' "$HELM_BIN"; } || true
  { [ "$want_kube" = 1 ] && [ ! -x "$KUBE_BIN" ] && printf '%s ' "$KUBE_BIN"; } || true
}

if [ -z "$(missing)" ]; then
  print_paths
  exit 0
fi
if [ "$no_build" = 1 ]; then
  log "not built yet (run scripts/build-tools.sh without --no-build): $(missing)"
  exit 3
fi

command -v go >/dev/null 2>&1 || die "the 'go' command is not on PATH; install Go >= 1.26 to build helm and kube-check"
mkdir -p "$BIN_DIR"
export GOPATH="$CACHE_DIR/go"
export GOMODCACHE="$CACHE_DIR/go/pkg/mod"
export GOCACHE="$CACHE_DIR/go-build"
export GOTOOLCHAIN=local
export GOFLAGS="-buildvcs=false"
export CGO_ENABLED=0
export GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}"

exec 9>"$CACHE_DIR/build-tools.lock"
if ! flock -n 9; then
  log "another build is running; waiting for $CACHE_DIR/build-tools.lock"
  flock 9
fi
WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/tracejudge-tools.XXXXXX")"
trap 'rm -rf "$WORK_DIR"' EXIT

if [ "$want_helm" = 1 ] && [ ! -x "$HELM_BIN" ]; then
  start=$SECONDS
  log "helm $HELM_VERSION: go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION (several minutes cold)"
  GOBIN="$WORK_DIR/gobin" go install -trimpath -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" \
    || die "helm: go install failed (see output above)"
  mv -f "$WORK_DIR/gobin/helm" "$HELM_BIN"
  times >"$WORK_DIR/helm.times"
  log "helm $HELM_VERSION: built $HELM_BIN in $((SECONDS - start))s ($(tail -n 1 "$WORK_DIR/helm.times"))"
fi
if [ "$want_kube" = 1 ] && [ ! -x "$KUBE_BIN" ]; then
  start=$SECONDS
  log "kube-check: go build ./scripts/kube-check"
  (cd "$KUBE_SRC" && go build -trimpath -ldflags "-s -w" -o "$KUBE_BIN.tmp" .) \
    || die "kube-check: go build failed (see output above)"
  find "$BIN_DIR" -maxdepth 1 -name 'kube-check-*' ! -name '*.tmp' -delete  # older sources' builds
  mv -f "$KUBE_BIN.tmp" "$KUBE_BIN"
  log "kube-check: built $KUBE_BIN in $((SECONDS - start))s"
fi
print_paths
