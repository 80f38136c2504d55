"""The processor contract: what every processor is, the factory that builds one, the registry.

The OpenTelemetry Collector's shape (``processorhelper.NewTraces(ctx, set, cfg, next, ...)``)
in Python: a processor ``consume``s a typed batch between ``start`` and ``shutdown`` and
hands it on to the next consumer; its factory has a ``kind``, a ``default_config()`` (a
frozen dataclass), fills that in from the collector's settings (``config_for``) and
``create``s the processor from its config, the next consumer and what the graph shares
(``Context``: the clock, the counters, the scrubber...). Each edge of the graph has its own
batch type, so a processor can only be placed where its batch flows; the assembly
(``assembly.py``) builds a chain of kinds in their declared order (``ProcessorRegistry.chain``:
the order they are registered in), last to first, each created with the one after it as its
``next``, so nothing is attached to a processor after it is built.

Every component also says what it counts: ``snapshot()`` returns its entries of
``/metrics`` (top-level key -> value), always the same keys. ``Lifecycle`` is the one
implementation of the states: ``start`` and ``shutdown`` are idempotent, and ``consume``
after ``shutdown`` raises ``ComponentStopped`` naming the component.

Adding a processor is one module (the processor and its factory) plus one line in the
registry the collector is given: ``PROCESSORS`` in ``processors/registry.py``, where
the line's place is the processor's place in the chain, or
``Collector(config, processors=PROCESSORS.with_factory(MyFactory(), after="logs_join"))``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

__all__ = [
    "B",
    "C",
    "ComponentStopped",
    "Consumer",
    "Discard",
    "Lifecycle",
    "Processor",
    "ProcessorFactory",
    "ProcessorRegistry",
]

B = TypeVar("B")
"""The batch type of one edge of the graph."""
B_contra = TypeVar("B_contra", contravariant=True)
C = TypeVar("C")
"""A factory's own config (a frozen dataclass)."""
X = TypeVar("X")
"""What the graph shares with the processors it builds (``Context``)."""
X_contra = TypeVar("X_contra", contravariant=True)


class ComponentStopped(RuntimeError):
    """A batch was given to a component after its ``shutdown``."""


class Consumer(Protocol[B_contra]):
    """Takes the batches of one edge (the next stage, as a processor sees it)."""

    def consume(self, batch: B_contra) -> None:
        """Take one batch; it is the consumer's from now on (hand it on, never keep it
        mutable)."""
        ...


class Processor(Protocol[B_contra]):
    """One stage between receipt and export: ``consume`` a batch, hand it on."""

    kind: str
    """Its factory's kind (the name in the declared order, in errors and metrics)."""

    def start(self) -> None:
        """Get ready to consume (threads, queues); a second call does nothing."""
        ...

    def consume(self, batch: B_contra) -> None:
        """Process one batch and hand it to the next consumer; ``ComponentStopped``
        after ``shutdown``."""
        ...

    def shutdown(self) -> None:
        """Release what ``start`` made; a second call does nothing."""
        ...

    def snapshot(self) -> Mapping[str, Any]:
        """Its ``/metrics`` entries (the same keys every time)."""
        ...


class ProcessorFactory(Protocol[C, B, X_contra]):
    """Builds one kind of processor from its own config (``C``) on an edge of batches ``B``,
    given what the graph shares (``X``)."""

    @property
    def kind(self) -> str:
        """The kind's name (what the declared order lists)."""
        ...

    def default_config(self) -> C:
        """The kind's config with every default filled in."""
        ...

    def config_for(self, settings: Any) -> C:
        """``default_config()`` filled in from the collector's settings."""
        ...

    def create(self, config: C, next: Consumer[B], context: X_contra) -> Processor[B]:
        """A new processor for ``config`` that hands its batches to ``next``."""
        ...


class Discard(Generic[B]):
    """The end of a chain: takes every batch and keeps nothing."""

    def consume(self, batch: B) -> None:
        """Nothing to do."""


class Lifecycle:
    """A component's states (new, started, stopped), kept in one place: ``start`` and
    ``shutdown`` report whether they changed anything, so a second call does nothing, and
    ``check`` refuses a batch after ``shutdown``."""

    __slots__ = ("name", "role", "started", "stopped")

    def __init__(self, name: str, role: str = "processor") -> None:
        self.name = name
        self.role = role
        """What it is, for the refusal (``processor``, ``exporter``)."""
        self.started = False
        self.stopped = False

    def start(self) -> bool:
        """True the first time (before any ``shutdown``): the component starts now."""
        if self.started or self.stopped:
            return False
        self.started = True
        return True

    def shutdown(self) -> bool:
        """True the first time: the component shuts down now."""
        if self.stopped:
            return False
        self.stopped = True
        return True

    def check(self) -> None:
        """Raise ``ComponentStopped`` once shut down (a batch must not be lost silently)."""
        if self.stopped:
            raise ComponentStopped(f"{self.role} {self.name!r} is shut down: batch refused")


@dataclass(frozen=True)
class ProcessorRegistry(Generic[B, X]):
    """The processor kinds of one edge (batches ``B``, built with context ``X``), by kind.
    A value, not global state: ``with_factory`` is this registry and one more kind."""

    factories: tuple[ProcessorFactory[Any, B, X], ...]

    def __post_init__(self) -> None:
        kinds = [f.kind for f in self.factories]
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"processor kinds registered twice: {sorted(kinds)}")

    def kinds(self) -> list[str]:
        """The registered kinds, in registration order."""
        return [f.kind for f in self.factories]

    def get(self, kind: str) -> ProcessorFactory[Any, B, X]:
        """The factory of ``kind`` (``ValueError`` naming the known kinds)."""
        for factory in self.factories:
            if factory.kind == kind:
                return factory
        raise ValueError(f"no processor kind {kind!r} (known: {', '.join(self.kinds())})")

    def with_factory(
        self, factory: ProcessorFactory[Any, B, X], *, after: str | None = None
    ) -> ProcessorRegistry[B, X]:
        """This registry and one more kind, placed last or right after the kind ``after``."""
        factories = list(self.factories)
        at = len(factories) if after is None else self.kinds().index(self.get(after).kind) + 1
        factories.insert(at, factory)
        return ProcessorRegistry(tuple(factories))

    def chain(self, settings: Any, context: X, last: Consumer[B]) -> list[Processor[B]]:
        """One processor of each kind, in registration order (the declared order of the
        edge), each handing its batches to the next and the last to ``last``: built last
        to first, so each is created with its ``next`` and its factory's
        ``config_for(settings)``. Returns them in order (the first is the edge's entry)."""
        built: list[Processor[B]] = []
        nxt: Consumer[B] = last
        for factory in reversed(self.factories):
            processor = factory.create(factory.config_for(settings), nxt, context)
            built.append(processor)
            nxt = processor
        built.reverse()
        return built
