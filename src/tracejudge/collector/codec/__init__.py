"""Codec: OTLP on the wire, traces and logs.

Split requests by trace, frame fragments, decode, OTLP/JSON and partial-success answers.
"""
