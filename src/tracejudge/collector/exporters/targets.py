"""Forward targets by name: the identity disk-queue rows are bound to.

A queued payload must follow its backend when the backend moves (a new port, a new host,
``http`` to ``https``), so the disk queue keys rows by a target *name*, not by the URL.
``--forward NAME=URL`` names a target; without a name it is named after its protocol
(``grpc`` or ``http``; the second unnamed one of a protocol ``grpc-2``, and so on, in the
order given), and ``--output`` is ``output``. With one backend per protocol, the common
case, changing its address needs no name at all; with several, naming them keeps each
one's rows its own whatever the order. A name that is no longer configured is a *removed*
target: its rows stay on disk, are reported, and ``tracejudge queue`` drains or drops them.

Why not match a removed URL to "the target that replaced it"? A rule guessed from the
URLs is wrong the day two backends change at once; a name is what the operator says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

OUTPUT_NAME = "output"
"""The name of the ``--output`` file target."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_LEADING_NAME = re.compile(r"^([^=:/]+)=(.*)$")
"""``NAME=URL``: a ``=`` before any ``:`` or ``/``, so a URL's own query is left alone."""


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """One configured target: the name its queued rows carry, and where it is now."""

    name: str
    url: str


def split_forward(entry: str) -> tuple[str | None, str]:
    """``NAME=URL`` as (name, URL); a bare URL as (None, URL). ``ValueError`` for a bad name."""
    m = _LEADING_NAME.match(entry.strip())
    if m is None:
        return None, entry.strip()
    name, url = m.group(1).strip(), m.group(2).strip()
    check_name(name)
    return name, url


def check_name(name: str) -> str:
    """A target name: letters, digits, ``_ . -``, at most 64, starting with a letter or digit."""
    if not _NAME.match(name):
        raise ValueError(
            f"{name!r} is not a target name (letters, digits, '_', '.', '-'; at most 64)"
        )
    return name


def protocol(url: str) -> str:
    """``grpc``, ``http`` or ``file`` (https and grpcs are the same protocols: a move to TLS
    keeps the name)."""
    return _PROTOCOLS.get(urlsplit(url).scheme, "http")


_PROTOCOLS = {"grpc": "grpc", "grpcs": "grpc", "file": "file"}


def target_specs(forward: list[str], output: Path | None = None) -> list[TargetSpec]:
    """The configured targets with their names (``ValueError`` for a duplicate name or URL).

    Explicit names are taken first, so an unnamed target never takes a name given to
    another; unnamed ones get ``<protocol>``, then ``<protocol>-2``, ... in order."""
    parsed = [split_forward(e) for e in forward]
    taken = {name for name, _ in parsed if name is not None}
    if output is not None:
        if OUTPUT_NAME in taken:
            raise ValueError(f"the name {OUTPUT_NAME!r} is the --output file's")
        taken.add(OUTPUT_NAME)
    if len(taken) != sum(1 for n, _ in parsed if n is not None) + (output is not None):
        raise ValueError("the same target name is given twice")
    specs: list[TargetSpec] = []
    for name, url in parsed:
        if name is None:
            base = protocol(url)
            name, n = base, 2
            while name in taken:
                name, n = f"{base}-{n}", n + 1
            taken.add(name)
        specs.append(TargetSpec(name, url))
    urls = [s.url for s in specs]
    if len(set(urls)) != len(urls):
        raise ValueError("the same URL is listed twice")
    if output is not None:
        specs.append(TargetSpec(OUTPUT_NAME, f"file:{output}"))
    return specs
