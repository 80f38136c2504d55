"""The exporters ``serve`` knows, by kind and by URL scheme.

Adding an exporter is one module (the exporter and its ``ExporterFactory``, as
``file_target.py``) and one line in ``EXPORTERS``. A registry is a value, not global
state: ``Collector(config, exporters=EXPORTERS.with_factory(...))`` runs with another set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tracejudge.collector.exporters.exporter import Exporter, ExporterFactory
from tracejudge.collector.exporters.file_target import FileExporterFactory
from tracejudge.collector.exporters.forward import OtlpGrpcFactory, OtlpHttpFactory

if TYPE_CHECKING:
    from tracejudge.collector.config import CollectorConfig


@dataclass(frozen=True)
class ExporterRegistry:
    """Factories by kind; each URL scheme served by exactly one of them."""

    factories: tuple[ExporterFactory[Any], ...]

    def __post_init__(self) -> None:
        kinds = [f.kind for f in self.factories]
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"exporter kinds registered twice: {sorted(kinds)}")
        schemes = [s for f in self.factories for s in f.schemes]
        if len(set(schemes)) != len(schemes):
            raise ValueError(f"URL schemes served by two exporter kinds: {sorted(schemes)}")

    def kinds(self) -> list[str]:
        """The registered kinds, in registration order."""
        return [f.kind for f in self.factories]

    def get(self, kind: str) -> ExporterFactory[Any]:
        """The factory of ``kind`` (``ValueError`` naming the known kinds)."""
        for factory in self.factories:
            if factory.kind == kind:
                return factory
        raise ValueError(f"no exporter kind {kind!r} (known: {', '.join(self.kinds())})")

    def for_url(self, url: str) -> ExporterFactory[Any]:
        """The factory serving ``url``'s scheme."""
        scheme = urlsplit(url).scheme
        for factory in self.factories:
            if scheme in factory.schemes:
                return factory
        known = ", ".join(s for f in self.factories for s in f.schemes)
        forms = [form for f in self.factories for form in f.url_forms]
        said = ", ".join(forms[:-1]) + f" or {forms[-1]}" if len(forms) > 1 else forms[0]
        raise ValueError(
            f"no exporter for {scheme or url!r} URLs (known: {known}); a target is {said}"
        )

    def build(self, url: str, config: CollectorConfig) -> Exporter:
        """The exporter for one configured target."""
        factory = self.for_url(url)
        return factory.create(factory.config_for(url, config))

    def with_factory(self, factory: ExporterFactory[Any]) -> ExporterRegistry:
        """This registry and one more kind."""
        return ExporterRegistry((*self.factories, factory))


EXPORTERS = ExporterRegistry(
    (
        OtlpHttpFactory(),
        OtlpGrpcFactory(),
        FileExporterFactory(),
    )
)
"""What ``tracejudge serve`` exports to: one line per kind."""
