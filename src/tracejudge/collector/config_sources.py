"""Where collector settings come from, each value kept with the key as the user wrote it.

Four layers, later ones winning: the config file, ``TRACEJUDGE_<SECTION>_<KEY>``
environment variables, ``--set SECTION.KEY=VALUE``, and ``serve``'s own flags. A file
writes a setting nested (``graders: {max_concurrent: 8}``, the canonical form) or by its
flat key (``grader_max_concurrent: 8``, as before); both may be mixed. Every value read is
a :class:`Written` carrying its ``label`` (``graders.max_concurrent``, the flat key,
``--set graders.max_concurrent`` or the variable's name), so every error starts with what
the user wrote. What cannot be read at all (an unknown key, a bad ``--set``, a variable
under a section that has no such key) is a problem string, in the order it was met.

Values of variables and ``--set`` are YAML scalars or flow values (``8``, ``2s``,
``[grpc://a:4317, grpc://b:4317]``, ``{api-key: env:API_KEY}``). Text that is no YAML
value is reported by its key and YAML's complaint, never the text (it may hold a secret);
values that parse are checked like the file's, whose messages never show a header's value
or a URL's credentials (``access``, ``display_url``).
Other ``TRACEJUDGE_*`` variables (``TRACEJUDGE_TOKEN``, ``TRACEJUDGE_CACHE_DIR``...), whose
second word is no section, are not settings and are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from tracejudge.collector.config_kinds import Setting

ENV_PREFIX = "TRACEJUDGE_"


@dataclass(frozen=True, slots=True)
class Written:
    """One value as given: the attribute it sets, the key as written, the raw value."""

    name: str
    label: str
    value: Any


Item = Written | str
"""A value read, or a problem met while reading (an unknown key, a bad ``--set``)."""


class Table:
    """The declared settings, indexed the ways users name them."""

    def __init__(self, settings: Sequence[Setting], renamed: Mapping[str, str]) -> None:
        self.settings = tuple(settings)
        self.by_name = {s.name: s for s in self.settings}
        self.renamed = dict(renamed)
        """Former flat names still accepted, with the name they became."""
        self.sections: dict[str, dict[str, Setting]] = {}
        for s in self.settings:
            self.sections.setdefault(s.section, {})[s.key] = s
        clash = set(self.sections) & (set(self.by_name) | set(self.renamed))
        if clash:
            raise ValueError(f"a section has a flat key's name: {sorted(clash)}")

    def flat(self, key: str) -> Setting | None:
        """The setting a flat key (or a former name) writes."""
        return self.by_name.get(self.renamed.get(key, key))

    def known(self) -> str:
        """Every top-level key a file may write: the sections and the flat keys."""
        return ", ".join(sorted(self.sections) + sorted(self.by_name))

    def keys_of(self, section: str) -> str:
        return ", ".join(sorted(self.sections[section]))


def _norm(key: Any) -> str:
    return str(key).replace("-", "_")


def from_mapping(values: Mapping[str, Any], table: Table) -> list[Item]:
    """A config file's mapping (or the flags', flat) as written values, in its order."""
    out: list[Item] = []
    for raw_key, value in values.items():
        key = _norm(raw_key)
        if key in table.sections:
            out.extend(_section(key, value, table))
            continue
        found = table.flat(key)
        if found is None:
            out.append(f"unknown key {raw_key!r} (known: {table.known()})")
        else:
            out.append(Written(found.name, key, value))
    return _once(out)


def _once(items: list[Item]) -> list[Item]:
    """``items`` with a second value for one setting in one layer made a problem
    (``decision.wait`` and ``decision_wait`` in one file: which did the author mean?)."""
    seen: dict[str, str] = {}
    out: list[Item] = []
    for item in items:
        if isinstance(item, Written) and item.value is not None:
            if item.name in seen:
                out.append(f"{item.label}: given twice (also as {seen[item.name]})")
                continue
            seen[item.name] = item.label
        out.append(item)
    return out


def _section(section: str, value: Any, table: Table) -> list[Item]:
    if value is None:  # a section with every key commented out
        return []
    if not isinstance(value, Mapping):
        known = table.keys_of(section)
        return [f"{section}: expected a mapping of its keys (known in {section}: {known})"]
    out: list[Item] = []
    for raw_key, item in value.items():
        found = table.sections[section].get(_norm(raw_key))
        if found is None:
            out.append(
                f"unknown key '{section}.{raw_key}' (known in {section}: {table.keys_of(section)})"
            )
        else:
            out.append(Written(found.name, found.path, item))
    return out


def from_env(environ: Mapping[str, str], table: Table) -> list[Item]:
    """The ``TRACEJUDGE_<SECTION>_<KEY>`` variables, by name; a variable under a known
    section that names no key of it is a problem (a typo never silently keeps a default)."""
    out: list[Item] = []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX):
            continue
        section, _, key = name[len(ENV_PREFIX) :].partition("_")
        if section.lower() not in table.sections or not section.isupper():
            continue
        found = table.sections[section.lower()].get(key.lower()) if key.isupper() else None
        if found is None:
            known = ", ".join(s.env for s in table.sections[section.lower()].values())
            out.append(f"{name}: no such setting (known: {known})")
            continue
        out.append(_parsed(found, name, environ[name]))
    return out


def from_sets(items: Sequence[str], table: Table) -> list[Item]:
    """``--set SECTION.KEY=VALUE`` items, in order."""
    out: list[Item] = []
    for item in items:
        path, sep, text = item.partition("=")
        path = path.strip()
        section, dot, key = path.partition(".")
        section, key = _norm(section), _norm(key)
        if not sep or not dot or not key:
            out.append(f"--set {path}: expected SECTION.KEY=VALUE (e.g. graders.max_concurrent=8)")
        elif section not in table.sections:
            out.append(f"--set {path}: unknown section {section!r} (known: {_sections(table)})")
        elif key not in table.sections[section]:
            out.append(f"--set {path}: unknown key (known in {section}: {table.keys_of(section)})")
        else:
            found = table.sections[section][key]
            out.append(_parsed(found, f"--set {found.path}", text))
    return out


def _sections(table: Table) -> str:
    return ", ".join(sorted(table.sections))


def _parsed(found: Setting, label: str, text: str) -> Item:
    """A variable's or ``--set``'s text read as a YAML value (an empty text: not given)."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "not a YAML value"
        return f"{label}: expected a YAML value ({problem})"
    return Written(found.name, label, value)


def read_sources(
    table: Table,
    file_values: Mapping[str, Any],
    flags: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    sets: Sequence[str] = (),
) -> list[Item]:
    """Every layer's items, lowest precedence first: file, environment, ``--set``, flags."""
    return [
        *from_mapping(file_values, table),
        *from_env(env or {}, table),
        *from_sets(sets, table),
        *from_mapping(flags, table),
    ]


def given(items: Sequence[Item]) -> frozenset[str]:
    """The attributes some layer gave a value (``None`` is not a value: a flag not passed)."""
    return frozenset(i.name for i in items if isinstance(i, Written) and i.value is not None)


def relabel(problems: Sequence[str], labels: Mapping[str, str]) -> list[str]:
    """Cross-field findings, worded with flat names (``decision_wait_after_root must not
    exceed decision_wait``), with each key shown as the user wrote it (``labels``: name to
    label; ``decision.wait_after_root must not exceed decision.wait``)."""
    moved = {name: label.removeprefix("--set ") for name, label in labels.items() if name != label}
    if not moved:
        return list(problems)
    names = "|".join(re.escape(n) for n in sorted(moved, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.$-])({names})(?![\w-])")
    return [pattern.sub(lambda m: moved[m.group(1)], p) for p in problems]
