"""Secrets in configuration: where they come from, and keeping them out of what is shown.

A header value for a hosted backend (``api-key``, ``Authorization``) must not sit in argv,
where ``ps`` shows it to every user, nor in a config file that is checked in. So a value
may name its source: ``env:NAME`` reads an environment variable, ``file:PATH`` a file (a
mounted Kubernetes secret); anything else is the value itself. URLs can carry credentials
too (``https://user:key@host``, ``?api_key=...``): ``display_url`` is the form that
``/metrics``, logs, client-facing messages and the disk queue's keys use.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

ENV_PREFIX = "env:"
FILE_PREFIX = "file:"


class SecretError(ValueError):
    """A secret reference names an unset variable or an unreadable file."""


def resolve_secret(spec: str, what: str) -> str:
    """The value ``spec`` stands for: ``env:NAME``, ``file:PATH`` (trailing newline
    stripped) or the literal text. ``what`` names the setting in an error."""
    if spec.startswith(ENV_PREFIX):
        name = spec[len(ENV_PREFIX) :]
        value = os.environ.get(name)
        if value is None or not value.strip():
            raise SecretError(f"{what}: environment variable {name!r} is not set or empty")
        return value.strip()
    if spec.startswith(FILE_PREFIX):
        path = Path(spec[len(FILE_PREFIX) :]).expanduser()
        try:
            value = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SecretError(f"{what}: cannot read {path}: {exc}") from exc
        if not value:
            raise SecretError(f"{what}: {path} is empty")
        return value
    return spec


def is_reference(spec: str) -> bool:
    """Whether ``spec`` names a source (``env:``/``file:``) rather than holding the value."""
    return spec.startswith((ENV_PREFIX, FILE_PREFIX))


def display_url(url: str, hide_path: bool = False) -> str:
    """``url`` without its credentials: user info becomes ``***``, query values ``***``;
    with ``hide_path`` the path too (a webhook URL is often a secret in itself)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        query = urlencode([(k, "***") for k, _ in parse_qsl(query, keep_blank_values=True)])
    path = "/***" if hide_path and parts.path not in ("", "/") else parts.path
    return urlunsplit((parts.scheme, netloc, path, query, ""))


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` keeps the port on this machine. A name other than
    ``localhost`` counts as not loopback: what it resolves to can change."""
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
