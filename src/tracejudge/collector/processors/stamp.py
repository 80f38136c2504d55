"""Write verdicts onto the spans themselves, so any trace backend shows them.

Stamping edits the parsed protobuf spans in place (no round trip through ``SpanRecord``):
the root of each judged run gets the verdict attributes, every cited span gets its failure
codes, and each rule outcome becomes a ``gen_ai.evaluation.result`` event on the span it
judged. Only fragments that changed are re-serialized by the caller.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

from tracejudge import semconv as sc
from tracejudge.collector.codec.otlp import length_delimited
from tracejudge.content import is_content_event, is_content_key
from tracejudge.engine.verdict import RuleOutcome, Verdict, clip_explanation

_SEVERITY = {"pass": 0, "not_applicable": 0, "warn": 1, "error": 2, "fail": 3}


@dataclass(slots=True)
class Decision:
    """What is remembered about a judged trace, to stamp spans that arrive late."""

    verdict: str
    codes_by_span: dict[bytes, list[str]] = field(default_factory=dict)


def _value(v: object) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, list | tuple):
        out = AnyValue()
        out.array_value.values.extend(_value(x) for x in v)
        return out
    return AnyValue(string_value=str(v))


def set_attr(span: Span, key: str, value: object) -> None:
    """Set (replace) one attribute on a protobuf span."""
    set_attrs(span, [(key, value)])


@functools.lru_cache(maxsize=4096, typed=True)
def _attr_field(key: str, value: object) -> bytes:
    """One attribute as serialized ``Span`` field 9 (cached: verdict attributes repeat)."""
    return length_delimited(9, KeyValue(key=key, value=_value(value)).SerializeToString())


def _attr_bytes(key: str, value: object) -> bytes:
    if isinstance(value, list | tuple):  # unhashable, and (True,) == (1,) would share a slot
        return length_delimited(9, KeyValue(key=key, value=_value(value)).SerializeToString())
    return _attr_field(key, value)


def set_attrs(span: Span, pairs: Sequence[tuple[str, object]]) -> None:
    """Set (replace) several attributes with one scan of the span's existing keys.

    New keys (the usual case) are appended by merging their serialized form, one C call
    instead of building ``KeyValue`` messages; a key the span already has is replaced in
    place (the span keeps one value per key).
    """
    wanted = {k for k, _ in pairs}
    for kv in span.attributes:
        if kv.key in wanted:
            _replace_attrs(span, pairs)
            return
    span.MergeFromString(b"".join([_attr_bytes(k, v) for k, v in pairs]))


def _replace_attrs(span: Span, pairs: Sequence[tuple[str, object]]) -> None:
    wanted = {k for k, _ in pairs}
    by_key = {kv.key: kv for kv in span.attributes if kv.key in wanted}
    for key, value in pairs:
        existing = by_key.get(key)
        if existing is not None:
            existing.value.CopyFrom(_value(value))
        else:
            span.attributes.append(KeyValue(key=key, value=_value(value)))


def overall(verdicts: Sequence[Verdict]) -> str:
    """The worst verdict of a trace's runs (``pass`` when the trace held no run)."""
    worst = "pass"
    for v in verdicts:
        if _SEVERITY.get(v.verdict, 2) > _SEVERITY.get(worst, 0):
            worst = v.verdict
    return worst


def verdict_attributes(v: Verdict) -> list[tuple[str, object]]:
    """The attributes a run root carries for verdict ``v``."""
    attrs: list[tuple[str, object]] = [(sc.TRACEJUDGE_VERDICT, v.verdict)]
    layer_keys = {
        "outcome": sc.TRACEJUDGE_LAYER_OUTCOME,
        "trajectory": sc.TRACEJUDGE_LAYER_TRAJECTORY,
        "policy": sc.TRACEJUDGE_LAYER_POLICY,
        "budget": sc.TRACEJUDGE_LAYER_BUDGET,
    }
    for layer, key in layer_keys.items():
        if layer in v.layers:
            attrs.append((key, v.layers[layer]))
    if v.primary is not None:
        attrs.append((sc.TRACEJUDGE_FAILURE_CODE, v.primary.code))
        if v.primary.span_ids:
            attrs.append((sc.TRACEJUDGE_FAILURE_SPAN_ID, v.primary.span_ids[0]))
        attrs.append((sc.TRACEJUDGE_FAILURE_EXPLANATION, clip_explanation(v.primary.explanation)))
    elif v.error:
        attrs.append((sc.TRACEJUDGE_FAILURE_EXPLANATION, clip_explanation(v.error)))
    attrs.append((sc.TRACEJUDGE_FINDINGS_COUNT, len(v.findings)))
    attrs.append((sc.TRACEJUDGE_RULES_VERSION, v.rules_version))
    return attrs


@functools.lru_cache(maxsize=4096)
def _event_bytes(rule_id: str, score: float | None, label: str, explanation: str) -> bytes:
    """A serialized ``gen_ai.evaluation.result`` event (cached: outcomes repeat across runs)."""
    ev = Span.Event(name=sc.EVENT_GEN_AI_EVALUATION_RESULT)
    ev.attributes.append(KeyValue(key=sc.GEN_AI_EVALUATION_NAME, value=_value(rule_id)))
    if score is not None:
        ev.attributes.append(KeyValue(key=sc.GEN_AI_EVALUATION_SCORE_VALUE, value=_value(score)))
    ev.attributes.append(KeyValue(key=sc.GEN_AI_EVALUATION_SCORE_LABEL, value=_value(label)))
    if explanation:
        ev.attributes.append(
            KeyValue(
                key=sc.GEN_AI_EVALUATION_EXPLANATION,
                value=_value(clip_explanation(explanation)),
            )
        )
    out: bytes = ev.SerializeToString()
    return out


def outcome_event_bytes(o: RuleOutcome) -> bytes:
    """One outcome's serialized ``gen_ai.evaluation.result`` span event, without its time
    (``logs_forward.py`` copies its attributes onto the log-record form of the event)."""
    body = _event_bytes(
        o.rule_id, None if o.score is None else float(o.score), o.result, o.explanation
    )
    return body + _extra_attributes(o) if o.attributes else body


def _extra_attributes(o: RuleOutcome) -> bytes:
    """An outcome's further attributes (a grader's ``tracejudge.grader.*``) as serialized
    event attributes: appended to the cached event body, protobuf merges them in."""
    ev = Span.Event()
    for key, value in o.attributes:
        ev.attributes.append(KeyValue(key=key, value=_value(value)))
    out: bytes = ev.SerializeToString()
    return out


@functools.lru_cache(maxsize=4096)
def _framed_event(
    rule_id: str, score: float | None, label: str, explanation: str
) -> tuple[bytes, bytes]:
    """Span field 11 header and event body for an outcome, leaving the 9-byte time field
    (tag + fixed64) to splice between them: the event's serialized form is cached whole."""
    body = _event_bytes(rule_id, score, label, explanation)
    return length_delimited(11, bytes(9) + body)[: -len(body) - 9], body


def _add_outcome_events(span: Span, outcomes: Sequence[RuleOutcome]) -> None:
    when = span.end_time_unix_nano or span.start_time_unix_nano or time.time_ns()
    # Event field 1 (time_unix_nano, fixed64) then the cached name and attributes, each
    # framed as Span field 11, merged in one call.
    stamp_time = b"\x09" + when.to_bytes(8, "little")
    parts = []
    for o in outcomes:
        if o.attributes:  # a grader's outcome: rare, framed uncached
            body = outcome_event_bytes(o)
            head = length_delimited(11, bytes(9) + body)[: -len(body) - 9]
        else:
            head, body = _framed_event(
                o.rule_id, None if o.score is None else float(o.score), o.result, o.explanation
            )
        parts.append(head)
        parts.append(stamp_time)
        parts.append(body)
    span.MergeFromString(b"".join(parts))


def index_spans(fragments: Sequence[ResourceSpans]) -> dict[bytes, tuple[int, Span]]:
    """Span id → (fragment index, span); the first occurrence wins for duplicate ids."""
    return _index_all(fragments)[0]


def _index_all(
    fragments: Sequence[ResourceSpans],
) -> tuple[dict[bytes, tuple[int, Span]], dict[bytes, list[tuple[int, Span]]]]:
    """``index_spans`` plus the further copies of duplicated span ids (a client's retried
    export that arrived before the decision): every copy is stamped alike, or the backend
    would hold one copy of a root with the verdict and one without."""
    first: dict[bytes, tuple[int, Span]] = {}
    more: dict[bytes, list[tuple[int, Span]]] = {}
    for i, rs in enumerate(fragments):
        for ss in rs.scope_spans:
            for span in ss.spans:
                sid = span.span_id
                if sid in first:
                    more.setdefault(sid, []).append((i, span))
                else:
                    first[sid] = (i, span)
    return first, more


def codes_by_span(verdicts: Iterable[Verdict]) -> dict[bytes, list[str]]:
    """Failure codes cited per span id (binary), de-duplicated, in finding order."""
    out: dict[bytes, list[str]] = {}
    for v in verdicts:
        for f in v.findings:
            for sid in f.span_ids:
                try:
                    key = bytes.fromhex(sid)
                except ValueError:
                    continue
                codes = out.setdefault(key, [])
                if f.code not in codes:
                    codes.append(f.code)
    return out


def stamp(
    fragments: Sequence[ResourceSpans], verdicts: Sequence[Verdict]
) -> tuple[set[int], Decision]:
    """Stamp verdicts onto the trace's spans; returns the changed fragment indexes."""
    index, copies = _index_all(fragments)
    changed: set[int] = set()
    decision = Decision(overall(verdicts), codes_by_span(verdicts))
    for v in verdicts:
        try:
            root_key = bytes.fromhex(v.root_span_id)
        except ValueError:
            root_key = b""
        hit = index.get(root_key)
        if hit is not None:
            attrs = verdict_attributes(v)
            for i, span in [hit, *copies.get(root_key, ())]:
                set_attrs(span, attrs)
                changed.add(i)
        by_span: dict[str, list[RuleOutcome]] = {}
        for o in v.outcomes:
            by_span.setdefault(o.span_id or v.root_span_id, []).append(o)
        for sid, outcomes in by_span.items():
            try:
                key = bytes.fromhex(sid)
            except ValueError:
                key = b""
            target = index.get(key)
            if target is None:
                key = root_key
                target = hit
            if target is not None:
                for i, span in [target, *copies.get(key, ())]:
                    _add_outcome_events(span, outcomes)
                    changed.add(i)
    for sid_bin, codes in decision.codes_by_span.items():
        cited = index.get(sid_bin)
        if cited is not None:
            for i, span in [cited, *copies.get(sid_bin, ())]:
                set_attr(span, sc.TRACEJUDGE_FINDING_CODES, codes)
                changed.add(i)
    return changed, decision


def stamp_late(fragment: ResourceSpans, decision: Decision) -> None:
    """Mark spans that arrived after their trace was judged, with the cached verdict."""
    for ss in fragment.scope_spans:
        for span in ss.spans:
            pairs: list[tuple[str, object]] = [
                (sc.TRACEJUDGE_LATE, True),
                (sc.TRACEJUDGE_VERDICT, decision.verdict),
            ]
            codes = decision.codes_by_span.get(span.span_id)
            if codes:
                pairs.append((sc.TRACEJUDGE_FINDING_CODES, codes))
            set_attrs(span, pairs)


def mark_error(fragment: ResourceSpans, explanation: str) -> str:
    """Stamp ``tracejudge.verdict = error`` and the explanation on the root spans of a
    fragment whose trace could not be judged; returns the first root's id (hex) or ""."""
    first = ""
    pairs: list[tuple[str, object]] = [
        (sc.TRACEJUDGE_VERDICT, "error"),
        (sc.TRACEJUDGE_FAILURE_EXPLANATION, clip_explanation(explanation)),
    ]
    for ss in fragment.scope_spans:
        for span in ss.spans:
            if not span.parent_span_id:
                set_attrs(span, pairs)
                first = first or span.span_id.hex()
    return first


def _strip_content(kvs: RepeatedCompositeFieldContainer[KeyValue]) -> bool:
    """Delete the content attributes of ``kvs`` in place; True if there were any."""
    found = [i for i, kv in enumerate(kvs) if is_content_key(kv.key)]
    for i in reversed(found):
        del kvs[i]
    return bool(found)


def drop_content(fragment: ResourceSpans) -> bool:
    """Strip message and tool content (``tracejudge.content``) from every span of a
    fragment: content attributes of spans and events, and content events whole. A span
    that lost any is marked ``tracejudge.content.dropped``; True if any was."""
    any_dropped = False
    for ss in fragment.scope_spans:
        for span in ss.spans:
            dropped = _strip_content(span.attributes)
            events = span.events
            if events:
                gone = []
                for i, e in enumerate(events):
                    if is_content_event(e.name):
                        gone.append(i)
                    elif _strip_content(e.attributes):
                        dropped = True
                for i in reversed(gone):
                    del events[i]
                dropped = dropped or bool(gone)
            if dropped:
                set_attr(span, sc.TRACEJUDGE_CONTENT_DROPPED, True)
                any_dropped = True
    return any_dropped


def verdict_span(fragment: ResourceSpans, v: Verdict) -> ResourceSpans | None:
    """Passthrough mode: a new child span of the run root that carries the verdict.

    The run's own spans were forwarded before judging, so the verdict travels on a span of
    its own in the same trace (``tracejudge.judged.span_id`` names the judged root).
    """
    try:
        trace_id = bytes.fromhex(v.trace_id)
        root_id = bytes.fromhex(v.root_span_id)
    except ValueError:
        return None
    if len(trace_id) != 16 or len(root_id) != 8:
        return None
    now = time.time_ns()
    out = ResourceSpans(resource=fragment.resource, schema_url=fragment.schema_url)
    ss = out.scope_spans.add()
    ss.scope.name = "tracejudge.collector"
    span = ss.spans.add(
        trace_id=trace_id,
        span_id=os.urandom(8),
        parent_span_id=root_id,
        name=f"tracejudge.verdict {v.agent or ''}".strip(),
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=now,
        end_time_unix_nano=now,
    )
    set_attrs(span, [*verdict_attributes(v), (sc.TRACEJUDGE_JUDGED_SPAN_ID, v.root_span_id)])
    codes = codes_by_span([v])
    if codes:
        flat: list[str] = []
        for cs in codes.values():
            flat.extend(c for c in cs if c not in flat)
        set_attr(span, sc.TRACEJUDGE_FINDING_CODES, flat)
    _add_outcome_events(span, v.outcomes)
    return out
