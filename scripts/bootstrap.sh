#!/usr/bin/env bash
# Creates .venv (if missing) and installs tracejudge with its dev dependencies.
# Safe to rerun: uv makes a no-op install take well under a second.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv with $($PY --version)" >&2
  "$PY" -m venv .venv
fi
if [ ! -x .venv/bin/uv ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "uv>=0.4"
fi
.venv/bin/uv pip install --quiet --python .venv/bin/python -e ".[dev]"
