"""Every test here gets the fake clock: its spans are compared whole, times included
(``tests/support/spans.py``)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _deterministic_times(fake_clock: object) -> None:
    """Span and event times from the fake clock (1 s per reading)."""
