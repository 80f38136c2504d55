"""Codec: OTLP on the collector's wire, traces and logs.

Split requests by trace within the per-request limits, frame fragments, decode them,
partial-success and status answers. OTLP/JSON and the records are ``tracejudge.otlp``'s,
shared with ``eval``.
"""
