"""``python -m tracejudge``: the ``tracejudge`` command, for when its script is not on PATH."""

from __future__ import annotations

from tracejudge.cli import main

if __name__ == "__main__":
    main(prog_name="tracejudge")
