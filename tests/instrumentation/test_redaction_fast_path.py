"""The redactor's fast path skips only patterns that cannot match.

Why it matters: redaction runs on every content attribute of every traced call, so it
checks cheap literals before running a regular expression. A skipped pattern that
*could* have matched would leak a secret; these tests pin that every default pattern
still fires in every letter case, inside JSON-in-JSON, next to other secrets, and that
user patterns and card numbers in non-ASCII text are never skipped.
"""

from __future__ import annotations

import re

import pytest

from tracejudge.instrumentation import Redactor
from tracejudge.instrumentation._content import (
    _DEFAULT_PATTERN_KEYWORDS,
    DEFAULT_REDACT_PATTERNS,
)

SECRETS = [
    "sk-proj-ABCDEFGHIJKLMNOPQRST",
    "AKIAABCDEFGHIJKLMNOP",
    "ghp_" + "a1" * 16,
    "BeArEr abcdefgh.12345",
    '"PassWord":"hunter2"',
    '\\"Api-Key\\": \\"abc123\\"',
    "CLIENT_SECRET=abc123",
    "Refresh_Token: xyz789",
    "pwd=letmein",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_every_default_secret_is_still_redacted(secret: str) -> None:
    """Secrets in any letter case and in escaped JSON are found and counted."""
    text, count = Redactor().redact(f"before {secret} after")
    assert count == 1
    assert "[REDACTED]" in text
    assert text.startswith("before ")


@pytest.mark.parametrize("secret", SECRETS)
def test_each_secret_carries_a_keyword_of_a_pattern_that_matches_it(secret: str) -> None:
    """The literal table is consistent with the patterns: any default pattern matching
    a sample also has one of its keywords in the lower-cased sample."""
    matched = False
    for pattern, words in zip(DEFAULT_REDACT_PATTERNS, _DEFAULT_PATTERN_KEYWORDS, strict=True):
        if re.search(pattern, secret):
            matched = True
            assert any(w in secret.lower() for w in words), (pattern, secret)
    assert matched


def test_user_patterns_always_run() -> None:
    """A custom pattern has no keyword to check: it runs on every text."""
    text, count = Redactor([r"ORD-\d{4}"]).redact("ticket ORD-1234 closed")
    assert text == "ticket [REDACTED] closed"
    assert count == 1


def test_several_secrets_in_one_text() -> None:
    """Skipping is decided per pattern: two different secrets are both redacted."""
    text, count = Redactor().redact("Bearer abcdefgh123 and password=hunter2")
    assert count == 2
    assert "abcdefgh123" not in text
    assert "hunter2" not in text


def test_card_number_detected_in_non_ascii_text() -> None:
    """The digit-count shortcut applies to ASCII text only; a card number next to
    non-ASCII characters is still found."""
    text, count = Redactor().redact("Karte für 4111-1111-1111-1111 ✓")
    assert text == "Karte für [REDACTED] ✓"
    assert count == 1


def test_few_digits_skip_the_card_scan_without_changing_text() -> None:
    """Text with fewer than 13 digits comes back unchanged (nothing to find)."""
    assert Redactor().redact("order A-1 costs 12.50") == ("order A-1 costs 12.50", 0)
