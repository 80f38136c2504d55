"""A judge measured against labels: per axis (and slice), the confusion table, the
false-pass and false-fail rates and the agreement, each with its Wilson score interval.

- **false pass**: runs labelled ``fail`` that the judge passed, out of all runs labelled
  ``fail`` on the axis (the misses: what a gate lets through);
- **false fail**: runs labelled ``pass`` that the judge failed, out of all labelled ``pass``
  (the false alarms);
- **agreement**: runs whose reading equals their label, out of all labelled runs;
- **undecided**, **not evaluated**: their share of the labelled runs. Neither is a pass nor a
  fail, so neither counts as a false pass or a false fail, but both count against agreement:
  a judge that decides nothing agrees with nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tracejudge.report.stats import Interval, wilson_interval
from tracejudge.validate.labels import LABEL_VALUES, Labelled, LabelsError, LabelSet, LabelValue
from tracejudge.validate.reading import OUTCOMES, AxisReading, JudgedRun, Outcome

METRICS: tuple[str, ...] = ("false_pass", "false_fail", "agreement", "undecided", "not_evaluated")


@dataclass(slots=True, frozen=True)
class Disagreement:
    """A labelled run whose reading is not its label."""

    item: Labelled
    run: JudgedRun
    label: LabelValue
    outcome: Outcome


@dataclass(slots=True, frozen=True)
class AxisFigures:
    """One axis on one slice (``slice_tag`` None: every labelled run)."""

    axis: str
    reading: str
    slice_tag: str | None
    slice_value: str | None
    confusion: dict[LabelValue, dict[Outcome, int]]
    """label -> reading -> runs."""
    disagreements: tuple[Disagreement, ...]

    @property
    def labelled(self) -> int:
        return sum(sum(row.values()) for row in self.confusion.values())

    def _count(self, label: LabelValue, outcome: Outcome) -> int:
        return self.confusion[label][outcome]

    def _total(self, label: LabelValue) -> int:
        return sum(self.confusion[label].values())

    def metric(self, name: str) -> Interval:
        """One of ``METRICS`` with its 95% Wilson interval."""
        if name == "false_pass":
            return wilson_interval(self._count("fail", "pass"), self._total("fail"))
        if name == "false_fail":
            return wilson_interval(self._count("pass", "fail"), self._total("pass"))
        if name == "agreement":
            same = self._count("pass", "pass") + self._count("fail", "fail")
            return wilson_interval(same, self.labelled)
        if name == "undecided" or name == "not_evaluated":
            outcome: Outcome = "undecided" if name == "undecided" else "not_evaluated"
            n = sum(self.confusion[label][outcome] for label in LABEL_VALUES)
            return wilson_interval(n, self.labelled)
        raise KeyError(name)

    @property
    def slice_name(self) -> str:
        return "all" if self.slice_tag is None else f"{self.slice_tag}={self.slice_value}"


def pair(labels: LabelSet, judged: Sequence[JudgedRun]) -> list[tuple[Labelled, JudgedRun]]:
    """Each labelled run with its judged run. A label naming a run that is not among the
    judged runs, a run id two runs share, or a case id that differs from the run's, is an
    error naming the labels file and line (``LabelsError``), all of them collected."""
    by_id: dict[str, JudgedRun] = {}
    shared: set[str] = set()
    for run in judged:
        for key in dict.fromkeys((run.run, run.trace_id)):
            if key in by_id and by_id[key] is not run:
                shared.add(key)
            by_id[key] = run
    errors: list[str] = []
    out: list[tuple[Labelled, JudgedRun]] = []
    for item in labels.items:
        where = f"{labels.path}:{item.line}"
        found = by_id.get(item.run)
        if found is None:
            errors.append(f"{where}: run {item.run!r} is not among the {len(judged)} judged runs")
            continue
        if item.run in shared:
            errors.append(f"{where}: run {item.run!r} names more than one judged run")
            continue
        if item.case is not None and found.case_id is not None and item.case != found.case_id:
            errors.append(
                f"{where}: run {item.run!r} is labelled case {item.case!r} but the run's "
                f"case is {found.case_id!r}"
            )
            continue
        out.append((item, found))
    if errors:
        raise LabelsError(errors)
    return out


def measure(
    pairs: Sequence[tuple[Labelled, JudgedRun]],
    readings: Mapping[str, AxisReading],
    axes: Sequence[str],
    slice_by: str | None = None,
) -> list[AxisFigures]:
    """The figures of every axis in ``axes`` over all labelled runs, then, with
    ``slice_by``, over each value of that tag (runs without the tag: ``(none)``)."""
    out: list[AxisFigures] = []
    for axis in axes:
        reading = readings[axis]
        read = [(item, run, reading.read(run)) for item, run in pairs if axis in item.labels]
        out.append(_figures(axis, reading.describe(), None, None, read))
        if slice_by is None:
            continue
        values = sorted({item.tags.get(slice_by, "(none)") for item, _, _ in read}, key=_natural)
        for value in values:
            part = [r for r in read if r[0].tags.get(slice_by, "(none)") == value]
            out.append(_figures(axis, reading.describe(), slice_by, value, part))
    return out


def slice_figures(
    pairs: Sequence[tuple[Labelled, JudgedRun]],
    reading: AxisReading,
    axis: str,
    tag: str,
    value: str,
) -> AxisFigures:
    """One axis on one slice (what a gate with ``@tag=value`` reads)."""
    read = [
        (item, run, reading.read(run))
        for item, run in pairs
        if axis in item.labels and item.tags.get(tag, "(none)") == value
    ]
    return _figures(axis, reading.describe(), tag, value, read)


def _natural(value: str) -> tuple[int, int, str]:
    return (0, int(value), "") if value.isdigit() else (1, 0, value)


def _figures(
    axis: str,
    reading: str,
    tag: str | None,
    value: str | None,
    read: Sequence[tuple[Labelled, JudgedRun, Outcome]],
) -> AxisFigures:
    confusion: dict[LabelValue, dict[Outcome, int]] = {
        label: dict.fromkeys(OUTCOMES, 0) for label in LABEL_VALUES
    }
    disagreements: list[Disagreement] = []
    for item, run, outcome in read:
        label = item.labels[axis]
        confusion[label][outcome] += 1
        if outcome != label:
            disagreements.append(Disagreement(item, run, label, outcome))
    return AxisFigures(axis, reading, tag, value, confusion, tuple(disagreements))


def unlabelled_runs(labels: LabelSet, judged: Sequence[JudgedRun]) -> int:
    """How many judged runs no label names (reported, not an error)."""
    named = {item.run for item in labels.items}
    return sum(1 for run in judged if run.run not in named and run.trace_id not in named)


__all__ = [
    "METRICS",
    "AxisFigures",
    "Disagreement",
    "measure",
    "pair",
    "slice_figures",
    "unlabelled_runs",
]
