"""Where the demo finds the refund example's rules and baselines.

They live in the repository's ``examples/refund/`` (they are examples users copy, not
package data). ``make demo`` runs from the repository root; an editable install can also
find them next to its source tree. Anything else must pass ``--rules``.
"""

from __future__ import annotations

from pathlib import Path

EXAMPLE_DIR = Path("examples") / "refund"


def _candidates() -> list[Path]:
    here = Path(__file__).resolve()
    return [Path.cwd() / EXAMPLE_DIR, here.parents[3] / EXAMPLE_DIR]


def example_dir() -> Path | None:
    """The refund example directory, if one can be found."""
    for candidate in _candidates():
        if (candidate / "rules.yaml").is_file():
            return candidate
    return None


def default_rules() -> Path:
    """``examples/refund/rules.yaml``; FileNotFoundError says where it looked."""
    found = example_dir()
    if found is None:
        looked = ", ".join(str(c / "rules.yaml") for c in _candidates())
        raise FileNotFoundError(
            f"no refund rules found (looked at {looked}); run from the tracejudge "
            "repository or pass --rules FILE"
        )
    return found / "rules.yaml"


def default_baselines() -> Path | None:
    """``examples/refund/baselines`` when it exists."""
    found = example_dir()
    if found is None or not (found / "baselines").is_dir():
        return None
    return found / "baselines"
