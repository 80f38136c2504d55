"""Access settings of a ``CollectorConfig``: who may connect, what is sent on, and the rule
that keeps an exposed collector from running open by accident.

Checked at start with the rest of the configuration (``CollectorConfig.validate`` turns an
``AccessError`` into a ``ConfigError``): a non-loopback address without bearer tokens or
client certificates is refused unless ``insecure_no_auth`` says so explicitly; TLS files
are loaded; header values are read from their sources. What is allowed but risky is
returned by ``security_warnings`` for start-up to say loudly.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tracejudge.collector.exporters.targets import split_forward
from tracejudge.collector.security.auth import TokenError, parse_tokens
from tracejudge.collector.security.credentials import SecretError, display_url, is_loopback
from tracejudge.collector.security.tls import ClientTls, ServerTls, TargetOptions, TlsError

if TYPE_CHECKING:
    from tracejudge.collector.config import CollectorConfig


class AccessError(ValueError):
    """Access settings that are missing, unreadable or unsafe: ``problems`` lists each one,
    starting with its key path (``forward[1].headers: ...``)."""

    def __init__(self, *problems: str) -> None:
        super().__init__(*problems)
        self.problems: tuple[str, ...] = problems

    def __str__(self) -> str:
        return "; ".join(self.problems)


_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")
_TARGET_KEYS = {"url", "name", "headers", "ca_file", "client_cert", "client_key"}
_TARGET_KEYS |= {"insecure_skip_verify"}


def forward_urls(cfg: CollectorConfig) -> list[str]:
    """The forward entries' URLs (an entry may be ``NAME=URL``)."""
    return [split_forward(entry)[1] for entry in cfg.forward]


def tokens(cfg: CollectorConfig) -> list[str]:
    """The configured bearer tokens, read from their file and variable now."""
    out: list[str] = []
    try:
        if cfg.auth_token_file is not None:
            try:
                text = Path(cfg.auth_token_file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise AccessError(f"auth_token_file: cannot read it: {exc}") from exc
            out += parse_tokens(text, f"auth_token_file {cfg.auth_token_file}")
        if cfg.auth_token_env is not None:
            value = os.environ.get(cfg.auth_token_env, "")
            out += parse_tokens(value, f"auth_token_env ${cfg.auth_token_env}")
    except TokenError as exc:
        raise AccessError(str(exc)) from exc
    return out


def server_tls(cfg: CollectorConfig) -> ServerTls | None:
    """The receivers' TLS settings, or None for plaintext."""
    if cfg.tls_cert is None or cfg.tls_key is None:
        return None
    return ServerTls(Path(cfg.tls_cert), Path(cfg.tls_key), cfg.tls_client_ca)


def target_options(cfg: CollectorConfig, url: str) -> TargetOptions:
    """Headers and TLS for one forward URL: its own entry over the global settings."""
    own = cfg.forward_target_options.get(url)
    base = ClientTls(
        cfg.forward_ca_file,
        cfg.forward_client_cert,
        cfg.forward_client_key,
        cfg.forward_insecure_skip_verify,
    )
    if own is None:
        return TargetOptions(dict(cfg.forward_headers), base)
    t = own.tls
    tls = ClientTls(
        t.ca_file or base.ca_file,
        t.client_cert or base.client_cert,
        t.client_key or base.client_key,
        t.insecure_skip_verify or base.insecure_skip_verify,
    )
    return TargetOptions({**cfg.forward_headers, **own.headers}, tls)


def exposed(cfg: CollectorConfig) -> list[str]:
    """The configured listen addresses that are not loopback."""
    hosts = [cfg.host]
    if cfg.management_port is not None:
        hosts.append(cfg.management_host or cfg.host)
    return sorted({h for h in hosts if not is_loopback(h)})


def authenticated(cfg: CollectorConfig) -> bool:
    """Whether clients must prove who they are (tokens, or client certificates)."""
    mtls = cfg.tls_client_ca is not None and server_tls(cfg) is not None
    return cfg.tokens_configured() or mtls


def validate(cfg: CollectorConfig) -> None:
    """Refuse unsafe or broken access settings (``AccessError`` naming the key)."""
    if (cfg.tls_cert is None) != (cfg.tls_key is None):
        raise AccessError("tls_cert and tls_key go together")
    if cfg.tls_client_ca is not None and cfg.tls_cert is None:
        raise AccessError("tls_client_ca: needs tls_cert and tls_key (mutual TLS is TLS)")
    if cfg.management_host is not None and cfg.management_port is None:
        raise AccessError("management_host: needs management_port (there is no listener)")
    unknown = set(cfg.forward_target_options) - set(forward_urls(cfg))
    if unknown:
        raise AccessError("forward_target_options: for a URL that is not forwarded to")
    if cfg.tokens_configured():
        tokens(cfg)
    tls = server_tls(cfg)
    try:
        if tls is not None:
            tls.ssl_context()
        for url in forward_urls(cfg):
            opts = target_options(cfg, url)
            what = f"forward {display_url(url)}"
            opts.tls.check(what)
            headers = opts.resolved_headers(what)
            if "@" in urlsplit(url).netloc and "authorization" in {h.lower() for h in headers}:
                raise AccessError(
                    f"{what}: credentials in the URL and an authorization header: give one"
                )
            if opts.tls.insecure_skip_verify and urlsplit(url).scheme == "grpcs":
                raise AccessError(
                    f"{what}: insecure_skip_verify is not supported for grpcs (give the "
                    "backend's CA with forward_ca_file)"
                )
    except (TlsError, SecretError) as exc:
        raise AccessError(str(exc)) from exc
    where = exposed(cfg)
    if where and not authenticated(cfg) and not cfg.insecure_no_auth:
        raise AccessError(
            f"host: listening on {', '.join(where)} without authentication is refused: "
            "anyone who can reach the port could send spans and read /metrics. Give "
            "--auth-token-file (or --auth-token-env) or --tls-client-ca, or pass "
            "--insecure-no-auth to accept that (e.g. on a private network)"
        )


def security_warnings(cfg: CollectorConfig) -> list[str]:
    """What start-up says loudly: exposed without auth (allowed explicitly), tokens over
    plaintext, a token file others can read, credentials forwarded in clear."""
    out = []
    where = exposed(cfg)
    if where and cfg.insecure_no_auth and not authenticated(cfg):
        out.append(
            f"SECURITY: listening on {', '.join(where)} with NO authentication "
            "(--insecure-no-auth): anyone who can reach these ports can send spans and "
            "read /metrics and /v1/gate"
        )
    if where and authenticated(cfg) and server_tls(cfg) is None:
        out.append(
            f"SECURITY: listening on {', '.join(where)} without TLS: bearer tokens and "
            "span content cross the network in clear (--tls-cert/--tls-key), unless a "
            "TLS-terminating proxy or mesh sits in front"
        )
    if cfg.auth_token_file is not None:
        mode = Path(cfg.auth_token_file).stat().st_mode
        if mode & 0o077:
            out.append(
                f"SECURITY: auth_token_file {cfg.auth_token_file} is readable by other "
                f"users (mode {mode & 0o777:o}): chmod 600 it"
            )
    for url in forward_urls(cfg):
        parts = urlsplit(url)
        secret = bool(target_options(cfg, url).headers) or "@" in parts.netloc
        plain = parts.scheme in ("http", "grpc")
        if secret and plain and not is_loopback(parts.hostname or ""):
            out.append(
                f"SECURITY: forward {display_url(url)}: credentials are sent in clear "
                "(use https:// or grpcs://)"
            )
    return out


def parse_headers(key: str, value: Any) -> dict[str, str]:
    """A header mapping (``{name: value}``) or ``NAME=VALUE`` strings (the flag's form);
    every bad header is reported (``AccessError.problems``), each under ``key``."""
    if isinstance(value, str):
        value = [value]
    problems: list[str] = []
    if isinstance(value, list | tuple):
        pairs: dict[str, Any] = {}
        for item in value:
            name, sep, v = str(item).partition("=")
            if not sep:
                problems.append(f"{key}: {name!r} is not NAME=VALUE")
            pairs[name.strip()] = v
        value = pairs
    if not isinstance(value, dict):
        raise AccessError(f"{key}: expected a mapping of header names to values")
    out = {}
    for name, v in value.items():
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            problems.append(f"{key}: {name!r} is not a header name")
        elif not isinstance(v, str) or not v:
            problems.append(f"{key}: {name}: expected a non-empty string")
        else:
            out[name] = v
    if problems:
        raise AccessError(*problems)
    return out


def _entry_path(path: str, item: dict[str, Any], key: str) -> Path | None:
    value = item.get(key)
    if value is not None and not isinstance(value, str):
        raise AccessError(f"{path}.{key}: expected a path, got {value!r}")
    return None if value is None else Path(value).expanduser()


def forward_entries(value: Any, key: str = "forward") -> tuple[list[str], dict[str, TargetOptions]]:
    """``forward:`` as the config file may write it, as entries (``URL`` or ``NAME=URL``)
    and the per-URL transport options: a URL; a list of URLs, ``NAME=URL`` strings or
    mappings (``url``, optional ``name``, the target's own ``headers`` and TLS keys); or a
    mapping of names to a URL or to such a mapping. Every bad entry is reported, each with
    its path: ``forward[1].headers`` in a list, ``forward.audit.headers`` in a mapping
    (``key``: the key as the user wrote it, ``exporters.targets`` when nested)."""
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for name, item in value.items():
            if isinstance(item, str):
                item = f"{name}={item}"
            elif isinstance(item, dict):
                item = {**item, "name": name}
            items.append((f"{key}.{name}", item))
    elif isinstance(value, str):
        items = [(key, value)]
    elif isinstance(value, list | tuple):
        items = [(f"{key}[{i}]", item) for i, item in enumerate(value)]
    else:
        raise AccessError(
            f"{key}: expected a URL, a list of URLs or a mapping of names to URLs, got {value!r}"
        )
    entries: list[str] = []
    options: dict[str, TargetOptions] = {}
    problems: list[str] = []
    for path, item in items:
        if isinstance(item, str):
            entries.append(item)
            continue
        try:
            entry, url, opts = _forward_entry(path, item)
        except AccessError as exc:
            problems.extend(exc.problems)
            continue
        options[url] = opts
        entries.append(entry)
    if problems:
        raise AccessError(*problems)
    return entries, options


def _forward_entry(path: str, item: Any) -> tuple[str, str, TargetOptions]:
    """One mapping entry of ``forward:``: its entry string, URL and transport options."""
    if not isinstance(item, dict) or not isinstance(item.get("url"), str):
        raise AccessError(f"{path}: expected a URL or a mapping with 'url'")
    problems: list[str] = []
    known = ", ".join(sorted(_TARGET_KEYS))
    for key in sorted(set(item) - _TARGET_KEYS):
        problems.append(f"{path}: unknown key {key!r} (known: {known})")
    skip = item.get("insecure_skip_verify", False)
    if not isinstance(skip, bool):
        problems.append(f"{path}.insecure_skip_verify: expected true or false")
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        problems.append(f"{path}.name: expected a string, got {name!r}")
    paths: list[Path | None] = []
    for key in ("ca_file", "client_cert", "client_key"):
        try:
            paths.append(_entry_path(path, item, key))
        except AccessError as exc:
            problems.extend(exc.problems)
    try:
        headers = parse_headers(f"{path}.headers", item.get("headers", {}))
    except AccessError as exc:
        problems.extend(exc.problems)
    if problems:
        raise AccessError(*problems)
    tls = ClientTls(paths[0], paths[1], paths[2], bool(skip))
    entry = item["url"] if name is None else f"{name}={item['url']}"
    return entry, item["url"], TargetOptions(headers, tls)
