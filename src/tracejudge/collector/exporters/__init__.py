"""Exporters: where judged traces, log records and verdicts leave the collector.

OTLP forward targets with retries and queues, the ``--output`` file target, verdict sinks,
the dead-letter file, the logs endpoint, the typed payloads that travel to them and the
fan-out that hands them over.
"""
