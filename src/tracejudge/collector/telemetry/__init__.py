"""Telemetry: what the collector says about itself and its verdicts.

Health counts and ``/healthz``, the ``/metrics`` exposition and its bounded labels, the
Flagger webhooks over the gate, and aiohttp's own error log, scrubbed.
"""
