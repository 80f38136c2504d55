"""A forward target that is a file: judged traces as OTLP/JSON lines (``serve --output``).

For running the collector with no trace backend at all (a laptop, a CI job, a first try):
the stamped spans are appended one ``ExportTraceServiceRequest`` per line, the layout of the
OpenTelemetry Collector's file exporter, so ``tracejudge eval`` and ``report --traces`` read
the file back as it is. Being a ``ForwardTarget``, it gets the same batching, late-span and
drop-content handling and the same disk queue as a network backend.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal, overload

from tracejudge.collector.component import Lifecycle
from tracejudge.collector.config import ConfigError
from tracejudge.collector.exporters.exporter import TargetExporter
from tracejudge.collector.exporters.forward import RetryableError
from tracejudge.collector.storage.files import DEFAULT_FILE_MODE, open_append
from tracejudge.otlp.json_encode import request_to_otlp_json

if TYPE_CHECKING:
    from tracejudge.collector.config import CollectorConfig


@overload
def open_for_append(
    path: Path | str, key: str, file_mode: int = ..., binary: Literal[False] = ...
) -> IO[str]: ...
@overload
def open_for_append(
    path: Path | str, key: str, file_mode: int, binary: Literal[True]
) -> IO[bytes]: ...
def open_for_append(
    path: Path | str, key: str, file_mode: int = DEFAULT_FILE_MODE, binary: bool = False
) -> IO[str] | IO[bytes]:
    """``path`` opened for appending (text, or bytes with ``binary``; created with
    ``file_mode``); ``ConfigError`` naming ``key`` if it cannot be. Every file the collector
    appends to is opened with it at start, so a path it cannot write stops the start."""
    try:
        if binary:
            return open_append(Path(path), file_mode, binary=True)
        return open_append(Path(path), file_mode)
    except OSError as exc:
        raise ConfigError(f"{key}: cannot write {path}: {exc.strerror or exc}") from exc


class FileTarget(TargetExporter):
    """Appends each forwarded batch to ``path`` as one OTLP/JSON line, flushed."""

    def __init__(self, path: Path, file_mode: int = DEFAULT_FILE_MODE) -> None:
        """Opens ``path`` for appending now: a file that cannot be written fails the start
        (``ConfigError`` naming the key), not the first forward."""
        self.path = path
        self.file_mode = file_mode
        self.url = f"file:{path}"
        self.state = Lifecycle(self.url, "exporter")
        self._fh: IO[str] | None = open_for_append(path, "output", file_mode)

    async def send(self, payload: bytes) -> None:
        """Encode and append in a worker thread (file I/O must not stall the event loop);
        a failed write (disk full, file removed) is retried like a backend outage."""
        line = json.dumps(request_to_otlp_json(payload), separators=(",", ":")) + "\n"
        try:
            await asyncio.to_thread(self._write, line)
        except OSError as exc:
            raise RetryableError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def _write(self, line: str) -> None:
        if self._fh is None:
            self._fh = open_append(self.path, self.file_mode)
        self._fh.write(line)
        self._fh.flush()

    async def close(self) -> None:
        """Close the file."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


@dataclass(frozen=True)
class FileExporterConfig:
    """The ``file`` exporter's own settings."""

    path: Path | None = None
    """The file appended to (``output``; the target URL ``file:PATH``)."""
    file_mode: int = DEFAULT_FILE_MODE
    """The mode it is created with (``file_mode``)."""


class FileExporterFactory:
    """``file``: judged traces as OTLP/JSON lines (``serve --output``, URL ``file:PATH``)."""

    kind = "file"
    schemes = ("file",)
    url_forms = ("file:PATH",)

    def check_url(self, url: str) -> None:
        """``file:PATH`` (or ``file://PATH``) with a path."""
        if not _path(url).name:
            raise ValueError("needs a path: file:PATH")

    def default_config(self) -> FileExporterConfig:
        """No path yet, created 0600."""
        return FileExporterConfig()

    def config_for(self, url: str, config: CollectorConfig) -> FileExporterConfig:
        """The path from ``file:PATH`` and the collector's ``file_mode``."""
        return replace(self.default_config(), path=_path(url), file_mode=config.file_mode)

    def create(self, config: FileExporterConfig) -> FileTarget:
        """A ``FileTarget`` (opened now: a path it cannot write stops the start)."""
        if config.path is None:
            raise ConfigError("output: the file exporter needs a path")
        return FileTarget(config.path, config.file_mode)


def _path(url: str) -> Path:
    return Path(url.removeprefix("file://").removeprefix("file:"))
