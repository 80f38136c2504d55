"""Where the tests find data outside the package.

``shared/`` (recorded cassettes, reference payloads) lies beside the repository, on a
developer's machine and in CI alike; resolving it from this file keeps the tests independent
of where the checkout lives.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = REPO_ROOT.parent / "shared"
CASSETTES = SHARED / "fixtures" / "cassettes"
OTLP_REFERENCE = SHARED / "reference" / "otlp"
GENAI_SCHEMAS = REPO_ROOT / "semconv" / "upstream" / "gen-ai"
"""The message JSON schemas of the pinned conventions (vendored in semconv/upstream/)."""
