#!/usr/bin/env bash
# Builds the mypyc-compiled wheel (what a release ships) into dist/ and installs it, with the
# dev extras, into .venv-compiled, where `make pytest-compiled` and the collector benchmark
# run it. Skipped when nothing it is built from changed (the compile takes about a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# The wheel is built from these: sources and package data (the demo's rules, the rules schema),
# build hook, project metadata.
hash=$( (find src -type f -not -path '*/__pycache__/*' -not -name '*.so' -print0 | sort -z | xargs -0 sha256sum; sha256sum pyproject.toml hatch_build.py) | sha256sum | cut -c1-16)
stamp=.venv-compiled/.tracejudge-build
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
  exit 0
fi
echo "build-compiled: compiling the hot path with mypyc (about a minute)" >&2
rm -rf dist/compiled
HATCH_BUILD_HOOK_ENABLE_CUSTOM=true .venv/bin/uv build --quiet --wheel --no-build-isolation \
  --python .venv/bin/python -o dist/compiled
wheel=$(ls dist/compiled/tracejudge-*.whl)
case "$wheel" in
  *-none-any.whl) echo "build-compiled: $wheel is a pure wheel; the mypyc hook did not run" >&2; exit 1 ;;
esac
if [ ! -x .venv-compiled/bin/python ]; then
  .venv/bin/uv venv --quiet --python .venv/bin/python .venv-compiled
fi
.venv/bin/uv pip install --quiet --python .venv-compiled/bin/python --reinstall-package tracejudge \
  "tracejudge[dev] @ file://$PWD/$wheel"
echo "$hash" > "$stamp"
