"""Bearer-token authentication for the receivers and the HTTP API.

Spans carry prompts, tool arguments and results; the gate and ``/metrics`` say which agents
run and how they fare. So once tokens are configured, every request must present one:
``authorization: Bearer <token>`` as gRPC metadata or as the HTTP ``Authorization`` header.
Only ``/healthz`` stays open (liveness probes rarely carry credentials, and it says no
more than "ok" and a span count).

Tokens come from a file (one per line, so a new token can be added before the old one is
removed; re-read when it changes) or an environment variable, never from a flag: argv is
visible to every user of the machine in ``ps``. Comparison is constant-time over SHA-256
digests (no early exit on the first wrong byte, and no length leak), against every
configured token.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

log = logging.getLogger("tracejudge.collector")

MIN_TOKEN_LENGTH = 16
"""Shorter tokens are refused at start: ``openssl rand -hex 32`` makes a good one."""
RELOAD_EVERY = 1.0
"""Seconds between checks of the token file's modification time."""
OPEN_PATHS = frozenset({"/healthz"})
"""HTTP paths served without a token."""
_LOG_EVERY = 10.0


class TokenError(ValueError):
    """The token source is missing, empty or holds a token too short to be safe."""


def parse_tokens(text: str, source: str) -> list[str]:
    """The tokens in ``text``: one per line, blank lines and ``#`` comments ignored."""
    tokens = [t.strip() for t in text.splitlines()]
    tokens = [t for t in tokens if t and not t.startswith("#")]
    if not tokens:
        raise TokenError(f"{source}: no token in it")
    for t in tokens:
        if len(t) < MIN_TOKEN_LENGTH:
            raise TokenError(
                f"{source}: a token is shorter than {MIN_TOKEN_LENGTH} characters "
                "(make one with `openssl rand -hex 32`)"
            )
        if any(c.isspace() for c in t) or not t.isprintable():
            raise TokenError(f"{source}: a token holds whitespace or control characters")
    return tokens


def _digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


@dataclass(slots=True)
class AuthStats:
    """Requests refused for want of a valid token, shared by every listener."""

    missing: int = 0
    """No ``authorization`` header / metadata, or not the Bearer scheme."""
    invalid: int = 0
    """A Bearer token that matches none of the configured ones."""
    by_listener: dict[str, int] = field(default_factory=dict)
    reloads: int = 0
    """Times the token file was read again after it changed."""
    reload_failures: int = 0
    """Times it changed but could not be used (the previous tokens kept)."""
    logged_at: float = -_LOG_EVERY

    def to_dict(self) -> dict[str, object]:
        """The ``auth`` block of ``/metrics``."""
        return {
            "refused": self.missing + self.invalid,
            "missing": self.missing,
            "invalid": self.invalid,
            "by_listener": dict(self.by_listener),
            "token_reloads": self.reloads,
            "token_reload_failures": self.reload_failures,
        }


class Authenticator:
    """Checks ``authorization`` values against the configured tokens and counts refusals.

    With ``watch`` (the token file) and ``reload`` (reads every token source again), a
    change to the file's modification time is picked up within ``RELOAD_EVERY`` seconds,
    so tokens rotate without a restart. A file that no longer parses (emptied, a short
    token) keeps the previous tokens, with an error in the log: a half-written secret
    must not lock every client out, nor let everyone in."""

    def __init__(
        self,
        tokens: Iterable[str],
        stats: AuthStats | None = None,
        *,
        watch: Path | None = None,
        reload: Callable[[], list[str]] | None = None,
    ) -> None:
        self._digests = [_digest(t.encode()) for t in tokens]
        if not self._digests:
            raise TokenError("no token configured")
        self.stats = AuthStats() if stats is None else stats
        self._watch = watch if reload is not None else None
        self._reload = reload
        self._mtime = self._stamp()
        self._checked = time.monotonic()

    def _stamp(self) -> tuple[int, int, int] | None:
        """What a change shows in: modification time, size, inode (a secret volume swaps
        the file for a new one; two writes within one clock tick differ in size)."""
        if self._watch is None:
            return None
        try:
            st = self._watch.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def _maybe_reload(self) -> None:
        """At most once per ``RELOAD_EVERY``: one ``stat``; a reload when the file changed."""
        now = time.monotonic()
        if self._reload is None or now - self._checked < RELOAD_EVERY:
            return
        self._checked = now
        stamp = self._stamp()
        if stamp is None or stamp == self._mtime:
            return  # unchanged, or gone for a moment (a secret volume being swapped)
        self._mtime = stamp
        try:
            tokens = self._reload()
        except ValueError as exc:
            self.stats.reload_failures += 1
            log.error("auth_token_file changed but is not usable; keeping the old tokens: %s", exc)
            return
        self._digests = [_digest(t.encode()) for t in tokens]
        self.stats.reloads += 1
        log.warning("auth_token_file reloaded: %d token(s)", len(self._digests))

    def valid(self, token: bytes) -> bool:
        """Whether ``token`` is one of ours, in time independent of where it differs."""
        got = _digest(token)
        ok = False
        for want in self._digests:  # every token compared: which one matched does not show
            ok |= hmac.compare_digest(got, want)
        return ok

    def check(self, header: str | None, listener: str, peer: str = "") -> str | None:
        """``None`` when ``header`` (the whole ``authorization`` value) carries a valid
        Bearer token; otherwise the reason to tell the client, with the refusal counted."""
        self._maybe_reload()
        scheme, _, token = (header or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            self.stats.missing += 1
            reason = "missing bearer token: send the header 'authorization: Bearer <token>'"
        elif not self.valid(token.encode("utf-8", "surrogateescape")):
            self.stats.invalid += 1
            reason = "invalid bearer token"
        else:
            return None
        self.stats.by_listener[listener] = self.stats.by_listener.get(listener, 0) + 1
        self._log(listener, peer, reason)
        return reason

    def _log(self, listener: str, peer: str, reason: str) -> None:
        """One warning per ten seconds at most: a scanner must not flood the log."""
        now = time.monotonic()
        if now - self.stats.logged_at >= _LOG_EVERY:
            self.stats.logged_at = now
            log.warning(
                "%s: refused a request%s: %s (refused so far: %d)",
                listener,
                f" from {peer}" if peer else "",
                reason.split(":")[0],
                self.stats.missing + self.stats.invalid,
            )


Refusal = Callable[[web.Request, str], web.StreamResponse]
"""Builds the 401 answer for a request (the OTLP receiver answers in the request's
encoding, the API in JSON)."""


def json_refusal(_request: web.Request, reason: str) -> web.StreamResponse:
    """A 401 with a JSON body naming the reason."""
    return web.json_response({"error": reason}, status=401)


def auth_middleware(
    auth: Authenticator, listener: str, refusal: Refusal = json_refusal
) -> Callable[..., Awaitable[web.StreamResponse]]:
    """An aiohttp middleware that refuses every request but ``OPEN_PATHS`` without a valid
    token, before the handler reads a byte of the body. New routes are covered by default."""

    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.path in OPEN_PATHS:
            return await handler(request)
        reason = auth.check(request.headers.get("Authorization"), listener, request.remote or "")
        if reason is None:
            return await handler(request)
        resp = refusal(request, reason)
        resp.headers["WWW-Authenticate"] = 'Bearer realm="tracejudge"'
        resp.force_close()  # the body is never read; an unauthenticated client gets no keep-alive
        return resp

    return middleware
