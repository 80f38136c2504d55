"""Processors: what happens to a trace between its receipt and its export.

Tail assembly (``buffer``), conversation holds, where a trace waits until settled
(``hold``), the judge seam and its thread, deciding one trace (decode, judge, scrub,
stamp), redaction, shadow pairing, the rule-cost budget and the logs held with their trace.
"""
