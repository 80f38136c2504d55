"""Telemetry: what the collector says about itself and its verdicts.

Health counts and ``/healthz``, the ``/metrics`` entries read from the components, its
exposition and bounded labels, the Flagger webhooks over the gate, and aiohttp's own error
log, scrubbed.
"""
