"""tracejudge: judge what AI agents did, not what they said.

The public API is what ``__all__`` lists; everything else is internal.
"""

from __future__ import annotations

import sys

# pip refuses 3.10 (requires-python); a checkout put on sys.path does not.
if sys.version_info < (3, 11):  # noqa: UP036 - the floor's message, for those it reaches
    raise ImportError(
        "tracejudge needs Python 3.11 or newer (its CEL binding, cel-expr-python, does); "
        f"this is Python {sys.version.split()[0]}"
    )

__version__ = "0.1.0"

# Imported after __version__: the instrumentation reads it for its tracer scope.
from tracejudge.instrumentation import (
    agent,
    instrument,
    route_key,
    tool,
    tool_call_id,
    uninstrument,
)

__all__ = [
    "__version__",
    "agent",
    "instrument",
    "route_key",
    "tool",
    "tool_call_id",
    "uninstrument",
]
