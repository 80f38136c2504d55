#!/usr/bin/env bash
# Creates .venv-bench: tracejudge plus the peer instrumentations, kept out of the main venv
# because their pins (opentelemetry-util-genai==1.1b0, httpx) are theirs, not ours. It takes
# the runtime extras, not [dev]: the dev tools pin a newer util-genai than the openai-v2 peer takes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
[ -x .venv-bench/bin/python ] || .venv/bin/uv venv --quiet --python .venv/bin/python .venv-bench
.venv/bin/uv pip install --quiet --python .venv-bench/bin/python -e ".[openai,anthropic,agents,langchain,gemini,bedrock,mistral,cohere]" -r bench/requirements-peers.txt
