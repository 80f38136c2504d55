"""Validation of judges: tracejudge's verdicts measured against labelled runs.

``labels`` reads the labels file, ``reading`` turns a verdict into an outcome per axis,
``sources`` makes judged runs from the engine's verdicts or verdict JSON lines, ``stats``
computes the false-pass and false-fail rates and agreement with Wilson intervals,
``gates`` checks ``--gate`` thresholds and ``report`` renders. ``tracejudge validate``
(cli/validate.py) puts them together.
"""

from __future__ import annotations

from tracejudge.validate.gates import Gate, GateError, GateResult, check_gates, parse_gate
from tracejudge.validate.labels import Labelled, LabelsError, LabelSet, load_labels, parse_labels
from tracejudge.validate.reading import (
    AxisReading,
    JudgedRun,
    Outcome,
    RuleFindings,
    WholeVerdict,
    parse_reading,
)
from tracejudge.validate.sources import from_verdict, from_verdicts, read_verdict_lines
from tracejudge.validate.stats import AxisFigures, Disagreement, measure, pair

__all__ = [
    "AxisFigures",
    "AxisReading",
    "Disagreement",
    "Gate",
    "GateError",
    "GateResult",
    "JudgedRun",
    "LabelSet",
    "Labelled",
    "LabelsError",
    "Outcome",
    "RuleFindings",
    "WholeVerdict",
    "check_gates",
    "from_verdict",
    "from_verdicts",
    "load_labels",
    "measure",
    "pair",
    "parse_gate",
    "parse_labels",
    "parse_reading",
    "read_verdict_lines",
]
