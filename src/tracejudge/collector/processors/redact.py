"""Scrub secrets from what the collector writes itself.

Spans reach the collector from any instrumentation, redacted or not, and the rules'
explanations quote arguments and results (``lookup_order customer_id='Bearer ...' is
outside the run's user_id``). Those explanations go onto forwarded spans, into verdict
JSON lines and webhooks, so every verdict is scrubbed once, right after judging, with the
shared detectors of ``tracejudge.redaction`` (the ones the ``sensitive_data`` rule and the
instrumentation use). Under ``--drop-content`` the values an explanation quotes are
dropped as well, since they are content. Optionally (``redact_attributes``) the string
attributes of forwarded spans are scrubbed too; and a log filter scrubs the collector's
log lines.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from tracejudge import semconv as sc
from tracejudge.engine.verdict import Finding, RuleOutcome, Verdict
from tracejudge.redaction import Redactor

DROPPED = "'[content dropped]'"
"""What a quoted value in an explanation becomes under ``--drop-content``."""

_OPENERS = frozenset(" =([{,:")
"""Characters after which a quote opens a value (``repr`` output); elsewhere, as in
``run's``, it is an apostrophe."""

_CACHE_MAX = 4096


def drop_quoted(text: str) -> str:
    """Replace every quoted literal (what ``short()``/``repr`` writes for a string value)
    with ``DROPPED``. A literal cut short by the explanation's length limit runs to the
    end of the text and is dropped whole."""
    if "'" not in text and '"' not in text:
        return text
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"" and (i == 0 or text[i - 1] in _OPENERS):
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            out.append(DROPPED)
            i = j + 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class Scrubber:
    """Redacts secrets (and, with ``drop_quoted``, quoted values) in collector output."""

    def __init__(self, patterns: Sequence[str] = (), *, drop_quoted: bool = False) -> None:
        self.redactor = Redactor(patterns)
        self.drop_quoted = drop_quoted
        self._cache: dict[str, str] = {}
        self.redacted = 0
        """Secrets replaced so far (explanations, attributes, log lines)."""

    def text(self, text: str) -> str:
        """The scrubbed text (cached: explanations repeat across runs)."""
        if not text:
            return text
        hit = self._cache.get(text)
        if hit is not None:
            return hit
        out, count = self.redactor.redact(text)
        self.redacted += count
        if self.drop_quoted:
            out = drop_quoted(out)
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[text] = out
        return out

    def verdict(self, v: Verdict) -> Verdict:
        """The verdict scrubbed: findings, the primary finding, rule outcomes and the error
        text (``v`` itself when there is nothing to change)."""
        findings, primary = v.findings, v.primary
        if findings:
            mapped = {id(f): self._finding(f) for f in findings}
            findings = [mapped[id(f)] for f in findings]
            if primary is not None:
                primary = mapped.get(id(primary)) or self._finding(primary)
        elif primary is not None:
            primary = self._finding(primary)
        outcomes = [self._outcome(o) for o in v.outcomes]
        error = self.text(v.error) if v.error else v.error
        if (
            error == v.error
            and primary is v.primary
            and all(a is b for a, b in zip(findings, v.findings, strict=True))
            and all(a is b for a, b in zip(outcomes, v.outcomes, strict=True))
        ):
            return v
        return replace(v, findings=findings, primary=primary, outcomes=outcomes, error=error)

    def _outcome(self, o: RuleOutcome) -> RuleOutcome:
        if not o.explanation:
            return o
        clean = self.text(o.explanation)
        return o if clean == o.explanation else replace(o, explanation=clean)

    def _finding(self, f: Finding) -> Finding:
        clean = self.text(f.explanation)
        if clean == f.explanation:
            return f
        return Finding(
            f.code,
            f.severity,
            f.layer,
            f.rule_id,
            f.span_ids,
            clean,
            f.step_index,
            f.absent,
            undecided=f.undecided,
        )

    def fragment(self, rs: ResourceSpans) -> bool:
        """Redact secrets in every string attribute of the fragment's spans and events
        (inside arrays and maps too: OpenInference ``llm.prompts`` is a list); a span
        that changed gets ``tracejudge.content.redacted`` (added to the count an
        instrumentation may have set). True if anything changed."""
        changed = False
        for ss in rs.scope_spans:
            for span in ss.spans:
                n = self.values(span.attributes)
                for ev in span.events:
                    n += self.values(ev.attributes)
                if n:
                    changed = True
                    self._count(span.attributes, n)
        return changed

    def values(self, kvs: Iterable[KeyValue]) -> int:
        """Redact secrets in the string values of ``kvs`` in place; how many were."""
        total = 0
        for kv in kvs:
            total += self.value(kv.value)
        return total

    def value(self, value: AnyValue) -> int:
        """Redact secrets in one value in place (strings, and the strings inside arrays
        and maps, at any depth); how many were replaced (added to ``redacted``)."""
        which = value.WhichOneof("value")
        if which == "string_value":
            out, count = self.redactor.redact(value.string_value)
            if count:
                value.string_value = out
                self.redacted += count
            return count
        if which == "array_value":
            return sum(self.value(v) for v in value.array_value.values)
        if which == "kvlist_value":
            return self.values(value.kvlist_value.values)
        return 0

    @staticmethod
    def _count(kvs: RepeatedCompositeFieldContainer[KeyValue], n: int) -> None:
        for kv in kvs:
            if kv.key == sc.TRACEJUDGE_CONTENT_REDACTED:
                kv.value.int_value = kv.value.int_value + n
                return
        kvs.add(key=sc.TRACEJUDGE_CONTENT_REDACTED).value.int_value = n


class LogScrubber(logging.Filter):
    """Scrubs secrets from the collector's log records (messages, arguments, tracebacks):
    exception texts and backend answers can quote span content."""

    def __init__(self, scrubber: Scrubber) -> None:
        super().__init__("tracejudge.collector")
        self.scrubber = scrubber

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record with its message scrubbed (never drops a record)."""
        try:
            message = record.getMessage()
        except Exception:  # a bad format string is logging's own problem to report
            return True
        redactor = self.scrubber.redactor
        clean, count = redactor.redact(message)
        if record.exc_info and record.exc_info[1] is not None:
            formatter = logging.Formatter()
            text, n = redactor.redact(formatter.formatException(record.exc_info))
            if n:
                record.exc_text = text
                record.exc_info = None
                count += n
        if count:
            record.msg = clean
            record.args = None
            self.scrubber.redacted += count
        return True
