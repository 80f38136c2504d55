"""Shared test support: the cassette replay server and span helpers (no test cases)."""
