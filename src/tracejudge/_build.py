"""Which build of tracejudge is running: mypyc-compiled hot path or pure Python.

Release wheels compile the judging hot path with mypyc (hatch_build.py); editable and
sdist installs are pure Python. The collector reports which one it runs, because the two
differ ~1.35x in throughput and a sizing decision should know.
"""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES


def compiled() -> bool:
    """True when the judging hot path (run model, engine, stamping) is compiled."""
    from tracejudge.model import steps

    return (steps.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES))


def build_kind() -> str:
    """``"compiled"`` or ``"pure-python"``, for logs and ``/metrics``."""
    return "compiled" if compiled() else "pure-python"
