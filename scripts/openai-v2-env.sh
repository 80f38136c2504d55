#!/usr/bin/env bash
# Runs the logs receiver's tests with the real opentelemetry-instrumentation-openai-v2.
#
# Why a second environment: openai-v2 2.4b0 (the latest release) imports
# opentelemetry.util.genai.instruments, which opentelemetry-util-genai 1.3 renamed, and the
# dev environment (.venv) needs util-genai 1.3 for the official openai-agents
# instrumentation. This builds .venv-openai-v2 (gitignored via .venv-*/) with tracejudge,
# openai-v2 2.4b0 and util-genai 1.1b0 (the pair bench/requirements-peers.txt pins; httpx,
# which openai-v2 imports without declaring it) and runs tests/sdk_matrix/openai_v2 there.
#
#   bash scripts/openai-v2-env.sh            # create/refresh the env, run the tests
#   bash scripts/openai-v2-env.sh -k grpc    # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${OPENAI_V2_VENV:-.venv-openai-v2}
UV=.venv/bin/uv
if [ ! -x "$UV" ]; then
  bash scripts/bootstrap.sh
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$UV" venv --quiet --python .venv/bin/python "$VENV"
fi
"$UV" pip install --quiet --python "$VENV/bin/python" -e . \
  "openai>=3.0" "opentelemetry-instrumentation-openai-v2==2.4b0" \
  "opentelemetry-util-genai==1.1b0" "httpx==0.28.1" \
  "pytest>=8.0" "pytest-timeout>=2.3"

"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
print("openai-v2-env: openai-v2", md.version("opentelemetry-instrumentation-openai-v2"),
      "util-genai", md.version("opentelemetry-util-genai"), "openai", md.version("openai"))
PY
export TRACEJUDGE_OPENAI_V2_ENV=1
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/sdk_matrix/openai_v2 "$@"
