#!/usr/bin/env bash
# Creates .venv (if missing) and installs tracejudge with its dev dependencies.
# Safe to rerun: uv makes a no-op install take well under a second.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "bootstrap: tracejudge needs Python 3.11 or newer; $PY is $("$PY" --version 2>&1)." >&2
  echo "bootstrap: run with PYTHON=python3.11 (or newer), e.g. PYTHON=python3.12 make test" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv with $($PY --version)" >&2
  "$PY" -m venv .venv
fi
if [ ! -x .venv/bin/uv ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "uv>=0.4"
fi
.venv/bin/uv pip install --quiet --python .venv/bin/python -e ".[dev]"
