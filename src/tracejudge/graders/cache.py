"""Judge answers on disk, so re-judging the same runs with the same grader costs nothing.

The key is the grader's identity (provider, model, prompt hash, rendering version), its
sampling settings, the sample's number and the hash of the evidence shown: a change to
any of them misses. Only answers that could be read are stored; a malformed answer, a
refusal or an error is asked again next time. Files are written whole (a temporary file
renamed into place) with mode 0600: an answer's reasons may quote the run's content.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from tracejudge.graders.prompt import Identity


def cache_key(
    ident: Identity, temperature: float, max_tokens: int, sample: int, evidence_digest: str
) -> str:
    """The hex key of one sample of one grader on one rendered run."""
    raw = f"{ident.version}\x1f{temperature!r}\x1f{max_tokens}\x1f{sample}\x1f{evidence_digest}"
    return hashlib.sha256(raw.encode()).hexdigest()


class AnswerCache:
    """A directory of answers (``<key[:2]>/<key>.json``), created on first write."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The stored answer text, or None (a missing or unreadable entry is a miss)."""
        try:
            doc = json.loads(self._path(key).read_text("utf-8"))
        except (OSError, ValueError):
            self.misses += 1
            return None
        text = doc.get("text") if isinstance(doc, dict) else None
        if not isinstance(text, str):
            self.misses += 1
            return None
        self.hits += 1
        return text

    def put(self, key: str, identity: str, text: str) -> None:
        """Store ``text`` under ``key`` (atomically; raises ``OSError`` when it cannot)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"grader": identity, "text": text}, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(body)
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
