"""Receivers: where OTLP enters the collector (gRPC and HTTP, traces and logs), with admission.

Each receiver takes raw bytes, checks the token and the in-flight budget before parsing, and
hands the request to a consumer Protocol (``tracejudge.collector.consumer``). ``listeners``
starts and stops one collector's listeners together. Nothing here judges or forwards.
"""
