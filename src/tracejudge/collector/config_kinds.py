"""What one collector setting is, declared on its field, and how a value of each kind is read.

``CollectorConfig`` declares every setting once, on its dataclass field, through
:func:`setting`: its kind (duration, size, integer, path...), the section and key users
write (``graders.max_concurrent``), its unit and its meaning. Everything else is derived
from that declaration: which parser a value goes through (:func:`coerce`), the nested
sections of the YAML file, the ``TRACEJUDGE_<SECTION>_<KEY>`` variables, ``--set``, the
docs table and the example file (``config_docs``).

Every parse error starts with the key as the user wrote it (``label``): the nested path
(``graders.max_concurrent``), the flat key, the ``--set`` path or the variable's name.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from tracejudge.collector.security import access


class ConfigError(ValueError):
    """Configuration values that are missing, unknown or out of range: ``problems`` lists
    every one found, each starting with its key path (``forward[1].headers: ...``)."""

    def __init__(self, *problems: str) -> None:
        super().__init__(*problems)
        self.problems: tuple[str, ...] = problems

    def __str__(self) -> str:
        if len(self.problems) == 1:
            return self.problems[0]
        lines = "\n".join(f"  {p}" for p in self.problems)
        return f"{len(self.problems)} problems in the configuration:\n{lines}"


class Kind(enum.Enum):
    """A setting's type, as the docs name it; each has one parser in :func:`coerce`."""

    DURATION = "duration"
    SIZE = "size"
    INT = "integer"
    BOOL = "boolean"
    STR = "string"
    URL = "URL"
    PATH = "path"
    PATH_OR_STDOUT = "path or -"
    MODE = "octal mode"
    REGEXES = "list of regexes"
    HEADERS = "header map"
    TARGETS = "list of targets"
    SLICES = "map of globs"


_UNITS = {Kind.DURATION: "s", Kind.SIZE: "bytes"}
FILE_KINDS = frozenset({Kind.PATH, Kind.PATH_OR_STDOUT})
"""Kinds whose relative values, in a config file, are relative to the file."""

_META = "tracejudge.setting"
SECTION = re.compile(r"^[a-z]+$")
"""A section name: one word, so ``TRACEJUDGE_<SECTION>_<KEY>`` splits at its first ``_``."""


@dataclass(frozen=True, slots=True)
class Declared:
    """What :func:`setting` stores in a field's metadata."""

    section: str
    key: str
    kind: Kind
    help: str
    unit: str


T = TypeVar("T")


def _meta(path: str, kind: Kind, help: str, unit: str) -> dict[str, Declared]:
    section, _, key = path.partition(".")
    if not SECTION.fullmatch(section) or not key:
        raise ValueError(f"{path!r}: a setting's path is SECTION.KEY, SECTION one word")
    return {
        _META: Declared(section, key, kind, " ".join(help.split()), unit or _UNITS.get(kind, ""))
    }


def setting(default: T, kind: Kind, path: str, help: str, unit: str = "") -> T:
    """A ``CollectorConfig`` field declared as a setting: ``path`` is ``section.key``."""
    return field(default=default, metadata=_meta(path, kind, help, unit))


def setting_factory(
    factory: Callable[[], T], kind: Kind, path: str, help: str, unit: str = ""
) -> T:
    """:func:`setting` for a mutable default (a list or a mapping)."""
    return field(default_factory=factory, metadata=_meta(path, kind, help, unit))


@dataclass(frozen=True, slots=True)
class Setting:
    """One declared setting: the attribute the code reads (``name``) and what users write."""

    name: str
    section: str
    key: str
    kind: Kind
    help: str
    unit: str
    default: Any

    @property
    def path(self) -> str:
        """The canonical, nested key: ``graders.max_concurrent``."""
        return f"{self.section}.{self.key}"

    @property
    def env(self) -> str:
        """Its environment variable: ``TRACEJUDGE_GRADERS_MAX_CONCURRENT``."""
        return f"TRACEJUDGE_{self.section.upper()}_{self.key.upper()}"


def declared(cls: type[Any]) -> tuple[Setting, ...]:
    """The settings a dataclass declares with :func:`setting`, in field order (fields
    without a declaration are internal: set from other keys, never written)."""
    return tuple(_settings(cls))


def _settings(cls: type[Any]) -> Iterator[Setting]:
    for f in dataclasses.fields(cls):
        meta = f.metadata.get(_META)
        if not isinstance(meta, Declared):
            continue
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            raise TypeError(f"{cls.__name__}.{f.name}: a setting needs a default")
        yield Setting(f.name, meta.section, meta.key, meta.kind, meta.help, meta.unit, default)


def _seconds(value: float) -> str:
    for unit, size in (("h", 3600.0), ("m", 60.0), ("s", 1.0)):
        if value >= size and value % size == 0:
            return f"{int(value // size)}{unit}"
    if value == 0:
        return "0s"
    return f"{round(value * 1000)}ms" if value < 1 else f"{value:g}s"


def _bytes(value: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value % size == 0:
            return f"{value // size}{unit}"
    return str(value)


def format_value(kind: Kind, value: Any) -> str:
    """``value`` as the YAML a user writes for a setting of ``kind``: ``2s``, ``64MiB``,
    ``"0600"`` (the docs' defaults, the example file's, the flags' help)."""
    if value is None:
        return "null"
    if kind is Kind.DURATION:
        return _seconds(float(value))
    if kind is Kind.SIZE:
        return _bytes(int(value))
    if kind is Kind.MODE:
        return f'"{value:04o}"'
    dumped = yaml.safe_dump(value, default_flow_style=True, width=1000).strip()
    return dumped.removesuffix("\n...").removesuffix("...").strip()


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|h)?\s*$")
_SIZE = re.compile(r"^\s*([0-9]+)\s*(B|KiB|MiB|GiB|KB|MB|GB)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {
    "b": 1,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
}
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(key: str, value: Any) -> float:
    """Seconds from ``2s``, ``200ms``, ``1m`` or a bare number of seconds."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected a duration like '2s' or '200ms', got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        m = _DURATION.match(str(value))
        if not m:
            raise ConfigError(f"{key}: expected a duration like '2s' or '200ms', got {value!r}")
        seconds = float(m.group(1)) * _DURATION_UNITS[m.group(2) or "s"]
    if seconds < 0:
        raise ConfigError(f"{key}: must not be negative, got {value!r}")
    return seconds


def parse_size(key: str, value: Any) -> int:
    """Bytes from ``16MiB``, ``512KB`` or a bare integer."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected a size like '16MiB', got {value!r}")
    if isinstance(value, int):
        size = value
    else:
        m = _SIZE.match(str(value))
        if not m:
            raise ConfigError(f"{key}: expected a size like '16MiB', got {value!r}")
        size = int(m.group(1)) * _SIZE_UNITS[(m.group(2) or "b").lower()]
    if size <= 0:
        raise ConfigError(f"{key}: must be positive, got {value!r}")
    return size


def coerce(kind: Kind, label: str, value: Any) -> Any:
    """``value`` read as ``kind``, or a ``ConfigError`` naming ``label``. A ``TARGETS``
    value becomes ``(entries, per-URL options)`` (``access.forward_entries``)."""
    if value is None:
        return None
    parse = _PARSERS[kind]
    try:
        return parse(label, value)
    except access.AccessError as exc:
        raise ConfigError(*exc.problems) from exc


def _int(label: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{label}: expected an integer, got {value!r}")
    return value


def _bool(label: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{label}: expected true or false, got {value!r}")
    return value


def _str(label: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{label}: expected a string, got {value!r}")
    return value


def _path(label: str, value: Any) -> Path:
    if not isinstance(value, str | Path):
        raise ConfigError(f"{label}: expected a path, got {value!r}")
    return Path(value)


def _regexes(label: str, value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(p, str) for p in items):
        raise ConfigError(f"{label}: expected a list of regexes, got {value!r}")
    for pattern in items:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"{label}: {pattern!r} is not a regex: {exc}") from exc
    return list(items)


def _file_mode(label: str, value: Any) -> int:
    """An octal mode: ``"0640"`` or ``"640"`` (flags and quoted YAML), or the number YAML
    reads from an unquoted ``0640``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"0?o?[0-7]{3}", value.strip()):
        return int(value.strip().lstrip("0o") or "0", 8)
    raise ConfigError(f"{label}: expected an octal mode like '0600' or '0640', got {value!r}")


def _case_slices(label: str, value: Any) -> dict[str, list[str]]:
    """``{slice: glob | [glob, ...]}``; a slice named ``other`` would merge with the unmatched."""
    if not isinstance(value, dict):
        raise ConfigError(
            f"{label}: expected a mapping of slice name to case-id globs, got {value!r}"
        )
    out: dict[str, list[str]] = {}
    for name, globs in value.items():
        items = [globs] if isinstance(globs, str) else globs
        if not isinstance(name, str) or not name or name == "other":
            raise ConfigError(f"{label}: {name!r} is not a usable slice name")
        if not isinstance(items, list) or not items or not all(isinstance(g, str) for g in items):
            raise ConfigError(f"{label}.{name}: expected a glob or a list of globs, got {globs!r}")
        out[name] = list(items)
    return out


def _targets(label: str, value: Any) -> tuple[list[str], dict[str, Any]]:
    entries, options = access.forward_entries(value, key=label)
    return entries, dict(options)


_PARSERS: dict[Kind, Callable[[str, Any], Any]] = {
    Kind.DURATION: parse_duration,
    Kind.SIZE: parse_size,
    Kind.INT: _int,
    Kind.BOOL: _bool,
    Kind.STR: _str,
    Kind.URL: _str,
    Kind.PATH: _path,
    Kind.PATH_OR_STDOUT: _str,
    Kind.MODE: _file_mode,
    Kind.REGEXES: _regexes,
    Kind.HEADERS: access.parse_headers,
    Kind.TARGETS: _targets,
    Kind.SLICES: _case_slices,
}
