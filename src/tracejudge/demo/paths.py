"""Where the demo finds the refund rules and baselines: in the installed package.

``tracejudge demo`` must work wherever tracejudge is installed (``pip install tracejudge``,
then any directory), so what it reads ships as package data in ``tracejudge/demo/data/``.
The repository's ``examples/refund/rules.yaml`` and ``baselines/`` are the same files, for
users to read and copy; tests/packaging/test_installed.py keeps the two byte-identical.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_dir() -> Path:
    """The packaged demo data directory (``rules.yaml``, ``baselines/``)."""
    return Path(str(resources.files("tracejudge.demo").joinpath("data")))


def _packaged(name: str, *, is_dir: bool) -> Path:
    path = data_dir() / name
    if not (path.is_dir() if is_dir else path.is_file()):
        raise FileNotFoundError(
            f"the demo's {name} is missing from this installation ({path}); "
            "reinstall tracejudge or pass --rules FILE --baselines DIR"
        )
    return path


def default_rules() -> Path:
    """The packaged refund rules; FileNotFoundError (naming the path) if the install lacks them."""
    return _packaged("rules.yaml", is_dir=False)


def default_baselines() -> Path:
    """The packaged baselines; a missing one is an error, not a demo without baseline checks."""
    return _packaged("baselines", is_dir=True)
