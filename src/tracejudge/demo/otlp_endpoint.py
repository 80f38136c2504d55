"""Where ``instrument()`` exports, and whether anything listens there (for the examples).

The examples ask before ``instrument()`` so they can say once that no collector runs; the
resolution and the probe are ``tracejudge.instrumentation``'s own (one copy).
"""

from __future__ import annotations

from tracejudge.instrumentation._endpoint import OtlpEndpoint, listening, traces_endpoint

__all__ = ["OtlpEndpoint", "listening", "traces_endpoint"]
