#!/usr/bin/env bash
# Re-take the pictures in docs/img/ from the real thing, photographed by headless Chromium:
# the HTML report of `tracejudge eval --html` over the refund example's recorded traces
# (examples/refund/traces/*.json, the four variants), and the terminal output of
# `tracejudge demo` (the same agent live: real OpenAI SDK, local scripted model, embedded
# collector).
#
#   scripts/screenshots.sh            (from anywhere; writes docs/img/*.png)
#
# A docs-maintenance script, not part of `make test`. Needs the project venv
# (`bash scripts/bootstrap.sh`) and Chromium; on Debian/Ubuntu it installs `chromium` with
# apt-get when missing (as root, or through sudo).
#
# Pictures:
#   docs/img/overview.png    the report's summary and pass rate per variant (bars, Wilson whiskers)
#   docs/img/timeline.png    a failed run's timeline with its finding markers, above a passed run
#   docs/img/demo-table.png  the terminal output of `tracejudge demo --html report.html`
#   docs/img/report-conversation.png  a run view of the tau-bench airline dev runs
#                            (examples/airline): the filter set to a code, the run's timeline and
#                            its conversation around the finding, at the tool call it is about,
#                            the sentence it cites highlighted in the cited turn
#                            (scripts/screenshot_conversation.py, Selenium over chromedriver)
#
# The report pictures come from the recorded traces rather than the live demo because those are
# byte-identical on every run (seeded ids, times on a 1 ms grid): re-taking the pictures changes
# them only when the report itself changes, and on that grid a tool call is as wide as a model
# call, so its name fits in its box. (Live, a tool call takes ~0.1 ms next to ~50 ms model
# calls and is drawn as a 3 px sliver.)
#
# scripts/screenshot_pages.py cuts each picture's part out of the report (the report's own
# markup and CSS, sections left out, nothing redrawn) and puts the demo's stdout in a terminal-
# styled page (with the command line that made it); the only change to that output is the
# checkout's path shown as `.`. Each page is measured first (`--dump-dom`) so the window fits
# the content: no cropping tool needed.
# The demo's span and trace ids are random, so demo-table.png differs in those digits.
#
# No Jaeger UI pictures: the Jaeger built by scripts/build-backends.sh from its Go module serves
# only a placeholder UI page (the real UI is a separate npm project, not available here). Its
# HTTP query API works; the end-to-end tests use that.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/docs/img"
SCALE=2  # device pixels per CSS pixel: sharp text on high-density screens, still small PNGs

browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
  echo "screenshots: installing chromium with apt-get" >&2
  sudo_="$([ "$(id -u)" = 0 ] || echo sudo)"
  $sudo_ apt-get update -qq
  $sudo_ apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
  browser="$(command -v chromium)"
fi
if [ ! -x "$ROOT/.venv/bin/tracejudge" ]; then
  echo "screenshots: no .venv here; run bash scripts/bootstrap.sh first" >&2
  exit 2
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

chrome() {
  # A fresh profile per call and everything that talks to the network switched off.
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$(mktemp -d -p "$work")" "$@" 2>/dev/null
}

shoot() {  # shoot NAME: measure work/NAME.html, then photograph it at that size
  local page="file://$work/$1.html" size width height
  size="$(chrome --window-size=1400,800 --dump-dom "$page" | sed -n 's/.*data-size="\([0-9]*x[0-9]*\)".*/\1/p')"
  if [ -z "$size" ]; then
    echo "screenshots: could not measure $1.html" >&2
    exit 1
  fi
  width="${size%x*}" height="${size#*x}"
  chrome --force-device-scale-factor="$SCALE" --window-size="$width,$height" \
    --screenshot="$OUT/$1.png" "$page" >/dev/null
  echo "docs/img/$1.png  ${width}x${height} css px, $(($(wc -c <"$OUT/$1.png") / 1024)) KiB"
}

cd "$ROOT"
status=0
.venv/bin/tracejudge eval --rules examples/refund/rules.yaml --baselines examples/refund/baselines \
  --html "$work/eval.html" examples/refund/traces/*.json >"$work/eval.out" 2>&1 || status=$?
if [ "$status" != 1 ]; then  # 1: some runs failed, as two of the four variants should
  cat "$work/eval.out" >&2
  echo "screenshots: tracejudge eval exited $status, expected 1 (failed runs)" >&2
  exit 1
fi
(cd "$work" && "$ROOT/.venv/bin/tracejudge" demo --html report.html) >"$work/demo.raw"
sed -e "s#$ROOT/#./#g" "$work/demo.raw" >"$work/demo.txt"
.venv/bin/python scripts/screenshot_pages.py "$work/eval.html" "$work/demo.txt" "$work"
mkdir -p "$OUT"
for name in overview timeline demo-table; do
  shoot "$name"
done
bash scripts/install-browser.sh  # the conversation picture clicks the filter: chromedriver too
status=0
.venv/bin/tracejudge eval --rules examples/airline/rules.yaml -q --html "$work/airline.html" \
  examples/airline/tau-bench-dev/gpt-4o-airline.dev.json >"$work/airline.out" 2>&1 || status=$?
if [ "$status" != 1 ]; then
  cat "$work/airline.out" >&2
  echo "screenshots: tracejudge eval (airline) exited $status, expected 1 (failed runs)" >&2
  exit 1
fi
.venv/bin/python scripts/screenshot_conversation.py "$work/airline.html" "$OUT/report-conversation.png"
