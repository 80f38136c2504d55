"""aiohttp's own error logging for the collector's HTTP listeners: scrubbed and
rate-limited.

aiohttp logs every request it cannot parse with ``logger.exception("Error handling
request from %s")``, and its parser's message quotes the offending bytes: an
``Authorization`` header of a bearer token and 9 KB logged a full traceback with the token
in it, once per request, unthrottled (issue 18, item 7). Each listener is given its own
logger (aiohttp's ``logger`` argument) whose filter

- turns a malformed request (an ``HttpProcessingError``: a header too long, a bad request
  line) into one line naming the client, the status and the error's kind, without the
  bytes it quotes and without a traceback: the client's fault is not the collector's;
- scrubs every other record (message and traceback) with the collector's scrubber, the
  one its own log lines get;
- logs the first record of each kind, then counts the rest for ``every`` seconds of the
  collector's clock; the next one logged says how many were not, and ``flush`` (at stop)
  logs what is left.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from aiohttp.http_exceptions import HttpProcessingError

from tracejudge.collector.clock import Clock
from tracejudge.collector.processors.redact import Scrubber

LOG_EVERY = 10.0
"""Seconds between two records of one kind."""

_MAX_KINDS = 64
"""Kinds remembered; beyond it the oldest is forgotten (its next record logs again)."""


@dataclass(slots=True)
class _Kind:
    logged_at: float
    suppressed: int = 0


class ServerErrors(logging.Filter):
    """The filter of a listener's aiohttp logger (``server_logger``)."""

    def __init__(self, scrubber: Scrubber, clock: Clock, every: float = LOG_EVERY) -> None:
        super().__init__()
        self.scrubber = scrubber
        self.clock = clock
        self.every = every
        self._kinds: dict[tuple[str, str], _Kind] = {}
        self.suppressed = 0
        """Records not logged so far (every kind)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record (malformed request: one line; else scrubbed); False when a
        record of its kind was logged less than ``every`` seconds ago."""
        exc = record.exc_info[1] if record.exc_info else None
        kind = (str(record.msg), type(exc).__name__ if exc is not None else "")
        if isinstance(exc, HttpProcessingError):
            self._malformed(record, exc)
        else:
            self._scrub(record)
        now = self.clock.now()
        seen = self._kinds.get(kind)
        if seen is not None and now - seen.logged_at < self.every:
            seen.suppressed += 1
            self.suppressed += 1
            return False
        if seen is not None and seen.suppressed:
            record.msg = f"{record.msg} ({seen.suppressed} more like it since the last line)"
        if seen is None and len(self._kinds) >= _MAX_KINDS:
            self._kinds.pop(next(iter(self._kinds)))
        self._kinds[kind] = _Kind(now)
        return True

    def _malformed(self, record: logging.LogRecord, exc: HttpProcessingError) -> None:
        # The message quotes what the client sent ("... when reading: b'Bearer ...'"):
        # keep what precedes the quote only.
        what = str(exc.message).split(":", 1)[0].strip().splitlines()[0] if exc.message else ""
        remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
        detail = f": {self.scrubber.text(what)}" if what else ""
        record.msg = "refused a malformed HTTP request from %s (%d %s%s)"
        record.args = (remote, exc.code, type(exc).__name__, detail)
        record.exc_info = None
        record.exc_text = None
        record.levelno, record.levelname = logging.WARNING, "WARNING"

    def _scrub(self, record: logging.LogRecord) -> None:
        redactor = self.scrubber.redactor
        try:
            message = record.getMessage()
        except Exception:  # a bad format string is logging's own problem to report
            return
        clean, count = redactor.redact(message)
        record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            text, n = redactor.redact(logging.Formatter().formatException(record.exc_info))
            record.exc_text, record.exc_info = text, None
            count += n
        self.scrubber.redacted += count

    def flush(self, logger: logging.Logger) -> None:
        """Log how many records of each kind were not logged since its last line."""
        left = [(kind, seen.suppressed) for kind, seen in self._kinds.items() if seen.suppressed]
        for (msg, exc), count in left:
            self._kinds[(msg, exc)].suppressed = 0
            what = f"{msg} ({exc})" if exc else msg
            logger.warning("%d more like %r were not logged", count, what)


def server_logger(scrubber: Scrubber, clock: Clock) -> tuple[logging.Logger, ServerErrors]:
    """A logger for one collector's aiohttp listeners and its filter. It is not in the
    logging registry (each collector has its own counts) but propagates to the
    ``tracejudge.collector`` logger's handlers."""
    logger = logging.Logger("tracejudge.collector.http")
    logger.parent = logging.getLogger("tracejudge.collector")
    errors = ServerErrors(scrubber, clock)
    logger.addFilter(errors)
    return logger, errors
