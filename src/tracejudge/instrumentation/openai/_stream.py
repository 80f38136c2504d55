"""OpenAI streams are observed by the shared ``StreamObserver`` (``instrumentation._stream``).

``StreamState`` is the name this module gave the observer before the providers shared
one; it stays importable under that name.
"""

from __future__ import annotations

from tracejudge.instrumentation._stream import Accumulator, StreamObserver

StreamState = StreamObserver

__all__ = ["Accumulator", "StreamState"]
