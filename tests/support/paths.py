"""Where the tests find their data: everything lives inside the repository.

Recorded cassettes and the OTLP reference payloads are copied into ``tests/fixtures/``
(Apache-2.0; each file's origin, commit and checksum in ``tests/fixtures/MANIFEST.tsv``,
attribution in NOTICE), so a plain clone passes its tests with nothing beside it.
Resolving from this file keeps the tests independent of where the checkout lives.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures"
"""Copied third-party test data; ``MANIFEST.tsv`` there lists every file."""
CASSETTES = FIXTURES / "cassettes"
OTLP_REFERENCE = FIXTURES / "otlp"
GENAI_SCHEMAS = REPO_ROOT / "semconv" / "upstream" / "gen-ai"
"""The message JSON schemas of the pinned conventions (vendored in semconv/upstream/)."""
