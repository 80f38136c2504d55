"""Offline reporting: statistics over judged runs, text tables and the HTML page."""

from __future__ import annotations
