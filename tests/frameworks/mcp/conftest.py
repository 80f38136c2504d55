"""Which MCP SDK major this environment has: the 2.x tests run in the dev environment,
the 1.x ones in scripts/sdk-matrix.sh's oldest-SDK environment (where openai-agents 0.2.7
brings mcp 1.30). Each file runs where its SDK is; none is skipped there."""

from __future__ import annotations

import importlib.metadata

MCP_MAJOR = int(importlib.metadata.version("mcp").split(".", 1)[0])
collect_ignore = ["test_mcp_v1.py"] if MCP_MAJOR != 1 else ["test_mcp.py"]
