"""tracejudge: judge what AI agents did, not what they said.

The public API is what ``__all__`` lists; everything else is internal.
"""

from __future__ import annotations

__version__ = "0.1.0"

# Imported after __version__: the instrumentation reads it for its tracer scope.
from tracejudge.instrumentation import agent, instrument, tool, tool_call_id, uninstrument

__all__ = ["__version__", "agent", "instrument", "tool", "tool_call_id", "uninstrument"]
