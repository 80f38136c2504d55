"""Write (or with ``--check`` verify) the shipped rules JSON Schema.

The schema is generated from the check declarations (``CheckSpec`` in each
``tracejudge.engine.checks`` module) plus the shared top level in
``tracejudge.engine.ruleschema``; this script is its command line, as
``semconv/generate.py`` is for ``semconv.py``.

Usage: ``python scripts/gen_rules_schema.py [--check]``
"""

from __future__ import annotations

import sys

from tracejudge.engine.ruleschema import main

if __name__ == "__main__":
    sys.exit(main())
