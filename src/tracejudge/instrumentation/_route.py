"""The routing key: what a load balancer in front of several collectors routes on.

Why: a collector judges what reaches it. A conversation spans several traces (one per
turn) and a shadow run is another trace than the stable run of its request, so routing by
trace id sends them to different collectors, each judging its share. The OpenTelemetry
Collector's ``load_balancing`` exporter can route on an attribute instead
(``routing_key: attributes``), but only on one that the spans carry, and it reads it from
the first span of each trace in a batch: a key that only some spans of a run carry splits
the run. So the key goes on *every* span started in the run's context, third-party
instrumentation's spans included, by a ``SpanProcessor`` (``instrument()`` adds it):

- the key is the explicit one of an open ``route_key()`` scope; else the parent span's
  (in this process), so a trace is never split by a child that names another
  conversation; else the span's own: ``conversation:{service.name}:{id}`` for
  ``gen_ai.conversation.id`` (or ``session.id``, on the span or the resource), else
  ``request:{id}`` for ``tracejudge.request.id`` (a stable run and its shadows share it);
- a span that finds a key also gives it to its open ancestors in this process that have
  none (the web framework's server span around the agent), so the trace's root travels
  with the run;
- no key (no conversation, no request id, an empty one): no attribute, and the shipped
  Collector configuration routes the span by its trace id.

The conversation key includes ``service.name``: two services that happen to use the same
conversation id (two tenants' "1") are two conversations and are routed apart. The request
key does not: a shadow runs in another deployment, often under another service name, and
is paired with the stable run by the request id alone.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from tracejudge import semconv as sc
from tracejudge.instrumentation._scope import ContextValueScope

ROUTE_KEY: Final = sc.TRACEJUDGE_ROUTE_KEY
_UNKNOWN_SERVICE: Final = "unknown_service"

_SPAN_KEYS: Final = frozenset({sc.GEN_AI_CONVERSATION_ID, sc.SESSION_ID, sc.TRACEJUDGE_REQUEST_ID})
"""The span attributes a key is made of (see ``key_of``)."""

_EXPLICIT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "tracejudge_route_key", default=None
)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def key_of(attributes: Mapping[str, Any], resource: Mapping[str, Any]) -> str | None:
    """The routing key a span's own attributes (then its resource's) give, or None."""
    for source in (attributes, resource):
        conversation = _text(source.get(sc.GEN_AI_CONVERSATION_ID)) or _text(
            source.get(sc.SESSION_ID)
        )
        if conversation is not None:
            service = _text(resource.get(sc.SERVICE_NAME)) or _UNKNOWN_SERVICE
            return f"conversation:{service}:{conversation}"
    for source in (attributes, resource):
        request = _text(source.get(sc.TRACEJUDGE_REQUEST_ID))
        if request is not None:
            return f"request:{request}"
    return None


def _plain(attributes: Mapping[str, Any]) -> Mapping[str, Any]:
    """The SDK's span attributes as a plain dict to scan: its ``MappingProxyType`` over
    ``BoundedAttributes`` is iterated in Python (taking the attributes' lock, copying the
    keys), while ``copy()`` (of the proxy, then of ``BoundedAttributes``) is a dict copy in
    C. Any other mapping is scanned as it is."""
    if type(attributes) is MappingProxyType:
        try:
            copied = attributes.copy()
        except Exception:  # a mapping without copy(): scanned as it is
            return attributes
        if type(copied) is dict:
            return copied
    return attributes


class RouteKeyProcessor(SpanProcessor):
    """Puts ``tracejudge.route.key`` on every span started in a keyed run's context (see
    the module docstring). ``instrument(route_key=True)``, the default, adds one to the
    tracer provider; add it yourself to a provider you build after ``instrument()``::

        provider.add_span_processor(RouteKeyProcessor())

    Cost per span: two context lookups and one attribute lookup on the parent.
    """

    def __init__(self) -> None:
        self.enabled = True
        self._open: dict[int, tuple[Span, int | None]] = {}
        """Span id -> (the live span, its parent's id when the parent is in this process),
        for the spans started and not yet ended: a key found late reaches the ancestors."""
        self._lock = threading.Lock()
        self._resource: tuple[Any, str, str | None, str | None] | None = None
        """(resource, its service name, the key its attributes give by conversation, by
        request): one tracer provider has one resource, whose attributes do not change."""

    def _key_of(self, attributes: Mapping[str, Any], resource: Any) -> str | None:
        """``key_of(attributes, resource.attributes)``, the resource's part remembered
        (the routing processor runs on every span: its lookups are per-span cost)."""
        known = self._resource
        if known is None or known[0] is not resource:
            res = resource.attributes
            service = _text(res.get(sc.SERVICE_NAME)) or _UNKNOWN_SERVICE
            conversation = _text(res.get(sc.GEN_AI_CONVERSATION_ID)) or _text(
                res.get(sc.SESSION_ID)
            )
            request = _text(res.get(sc.TRACEJUDGE_REQUEST_ID))
            known = self._resource = (
                resource,
                service,
                f"conversation:{service}:{conversation}" if conversation is not None else None,
                f"request:{request}" if request is not None else None,
            )
        if _SPAN_KEYS.isdisjoint(_plain(attributes)):
            # the common span, named by neither: one pass over its keys instead of three
            # lookups that each raise KeyError inside the SDK's attribute mapping
            return known[2] if known[2] is not None else known[3]
        conversation = _text(attributes.get(sc.GEN_AI_CONVERSATION_ID)) or _text(
            attributes.get(sc.SESSION_ID)
        )
        if conversation is not None:
            return f"conversation:{known[1]}:{conversation}"
        if known[2] is not None:
            return known[2]
        request = _text(attributes.get(sc.TRACEJUDGE_REQUEST_ID))
        if request is not None:
            return f"request:{request}"
        return known[3]

    def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
        if not self.enabled:
            return
        parent = trace.get_current_span(parent_context)
        parent_ctx = parent.get_span_context()
        parent_id = parent_ctx.span_id if parent_ctx.is_valid and not parent_ctx.is_remote else None
        key = _EXPLICIT.get()
        if key is None and parent_id is not None:
            attributes = getattr(parent, "attributes", None)
            if attributes:
                key = _text(attributes.get(ROUTE_KEY))
        if key is None:
            own = span.attributes  # (an empty one reads as no attributes, as ``{}``)
            key = self._key_of(own if own is not None else {}, span.resource)
        own_id = span.get_span_context().span_id
        if key is None:
            # one store, atomic (as ``on_end``'s pop): the lock orders the key's walk
            # up the ancestors, which a span without a key does not take
            self._open[own_id] = (span, parent_id)
            return
        with self._lock:
            self._open[own_id] = (span, parent_id)
            span.set_attribute(ROUTE_KEY, key)
            self._give_ancestors(parent_id, key)

    def _give_ancestors(self, parent_id: int | None, key: str) -> None:
        """The open ancestors in this process without a key take this one (under the
        lock); one that has a key already keeps it, and the walk stops there."""
        seen = 0
        while parent_id is not None and seen < 1_000:
            entry = self._open.get(parent_id)
            if entry is None:
                return
            ancestor, parent_id = entry
            attributes = ancestor.attributes or {}
            if attributes.get(ROUTE_KEY) is not None or not ancestor.is_recording():
                return
            ancestor.set_attribute(ROUTE_KEY, key)
            seen += 1

    def on_end(self, span: ReadableSpan) -> None:
        context = span.get_span_context()
        if context is None:
            return
        self._open.pop(context.span_id, None)  # atomic: no lock (see ``on_start``)

    def shutdown(self) -> None:
        with self._lock:
            self._open.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class RouteKeyScope(ContextValueScope[str]):
    """``with route_key("tenant-7:conv-42"): ...`` (see ``route_key``)."""

    __slots__ = ()

    def __init__(self, key: str) -> None:
        super().__init__(_EXPLICIT, key, "a route_key()")


def route_key(key: str) -> RouteKeyScope:
    """Route every span started in this block by ``key``, whatever its run names.

    Normally not needed: a run's conversation id or request id is its key. Use it where
    spans that belong together do not say so, e.g. a shadow of one turn of a conversation
    (give it the stable conversation's key, ``conversation:{service.name}:{id}``), or
    spans of one conversation emitted by services with different names::

        with tracejudge.route_key(f"conversation:support:{session}"):
            handle(request)
    """
    if not isinstance(key, str) or not key:
        raise ValueError(f"route_key() needs a non-empty string key, got {key!r}")
    return RouteKeyScope(key)
