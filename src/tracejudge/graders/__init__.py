"""Semantic graders: a model answering a rubric of yes/no properties, above the rules.

A grader is a ``type: grader`` check in a rules file. The engine leaves its outcome
``not_applicable``; ``apply_graders`` runs it afterwards, on the runs its ``when`` picks
(by default only those the deterministic checks left undecided), and adds what it found
to the verdict. It never removes a deterministic finding, so a hard gate that failed stays
failed. See docs/graders.md.

Modules, one thing each:

- ``spec``: ``GraderSpec`` (the rubric, model, samples, temperature, when) from rules params
- ``rendering``: the evidence the model is shown (blind, redacted, with span ids)
- ``prompt``: the fixed instructions and answer shape, and the prompt hash
- ``answer``: parsing and checking one answer (citations held against the run)
- ``vote``: the majority over samples, with agreement
- ``providers``: the ``Provider`` seam and the OpenAI-compatible and Anthropic providers
- ``telemetry``: each model call a GenAI ``chat`` span (``TracedProvider``)
- ``cache``: answers on disk keyed by grader identity and evidence hash
- ``apply``: running graders over verdicts
- ``pairwise``: baseline-vs-candidate comparison with the order randomised per pair
"""

from __future__ import annotations
