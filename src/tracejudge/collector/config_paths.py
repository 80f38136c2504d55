"""Relative paths in a ``serve --config`` file are relative to the file, not to the shell.

A config file names its rules, baselines, certificates and token files next to itself
(``rules: rules.yaml``); started from another directory (a service manager, a container
entrypoint, ``tracejudge serve --config deploy/serve.yaml``), those names must still mean
the files beside it, as in every tool that reads a config file. Flags stay relative to
the working directory, like any command-line path.

Resolved here, by the kind each setting declares (``config_kinds``), whether the file
writes it nested (``judge: {rules: rules.yaml}``) or flat (``rules: rules.yaml``): every
path, ``verdicts.jsonl`` (``-`` is stdout), the ``file:PATH`` secret references of
``exporters.headers``, and the TLS files and header references of the targets
``exporters.targets`` writes as mappings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracejudge.collector.config_kinds import Kind, Setting
from tracejudge.collector.config_sources import Table
from tracejudge.collector.security.credentials import FILE_PREFIX

_TARGET_FILES = ("ca_file", "client_cert", "client_key")


def resolve_config_paths(values: dict[str, Any], base: Path, table: Table) -> dict[str, Any]:
    """``values`` of a config file in ``base`` with its relative paths made relative to
    ``base`` (keys may be written with ``-`` or ``_``, nested or flat; anything malformed
    is left for the config's own checks to report)."""
    out: dict[str, Any] = {}
    for raw_key, value in values.items():
        key = str(raw_key).replace("-", "_")
        section = table.sections.get(key)
        if section is not None and isinstance(value, dict):
            out[raw_key] = {
                sub: _resolve(section.get(str(sub).replace("-", "_")), base, item)
                for sub, item in value.items()
            }
        else:
            out[raw_key] = _resolve(table.flat(key), base, value)
    return out


def _resolve(setting: Setting | None, base: Path, value: Any) -> Any:
    kind = None if setting is None else setting.kind
    if kind is Kind.PATH or (kind is Kind.PATH_OR_STDOUT and value != "-"):
        return _path(base, value)
    if kind is Kind.HEADERS:
        return _headers(base, value)
    if kind is Kind.TARGETS:
        return _forward(base, value)
    return value


def _path(base: Path, value: Any) -> Any:
    if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
        return str(base / value)
    return value


def _reference(base: Path, value: Any) -> Any:
    """A ``file:PATH`` secret reference with PATH made relative to ``base``."""
    if isinstance(value, str) and value.startswith(FILE_PREFIX):
        return FILE_PREFIX + str(_path(base, value[len(FILE_PREFIX) :]))
    return value


def _headers(base: Path, value: Any) -> Any:
    if isinstance(value, dict):
        return {name: _reference(base, v) for name, v in value.items()}
    if isinstance(value, list | tuple):
        out = []
        for item in value:
            name, sep, v = str(item).partition("=") if isinstance(item, str) else ("", "", "")
            out.append(f"{name}={_reference(base, v)}" if sep else item)
        return out
    return value


def _target(base: Path, item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    out = dict(item)
    for key in _TARGET_FILES:
        if key in out:
            out[key] = _path(base, out[key])
    if "headers" in out:
        out["headers"] = _headers(base, out["headers"])
    return out


def _forward(base: Path, value: Any) -> Any:
    if isinstance(value, dict):
        return {name: _target(base, item) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_target(base, item) for item in value]
    return value
