"""A small real filesystem for disk-fault tests: a tmpfs of a few MiB.

SQLite's behaviour on a full disk (ENOSPC on the WAL, on the ``-shm`` file, on a
checkpoint that must grow the database) only shows on a filesystem that really runs out;
``max_page_count`` fails the database's own growth but never the WAL's. Mounting a tmpfs
needs the right to mount (root, as in the project's CI container).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

FILLER = "filler"


def mount_tmpfs(path: Path, size: int) -> bool:
    """Mount a ``size``-byte tmpfs on ``path`` (an empty directory); False when this
    process may not mount."""
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
            capture_output=True,
            check=False,
        )
    except OSError:  # no mount command
        return False
    return done.returncode == 0


def unmount(path: Path) -> None:
    """Detach the tmpfs (lazily: a file still open in it does not keep it mounted)."""
    subprocess.run(["umount", "-l", str(path)], check=False)


def fill(volume: Path) -> None:
    """Take every free byte of ``volume`` with a file, as another process filling the
    disk would; the write stops with ENOSPC, which is the point."""
    st = os.statvfs(volume)
    with open(volume / FILLER, "ab") as fh, contextlib.suppress(OSError):
        fh.write(b"\0" * (st.f_bavail * st.f_frsize))


def unfill(volume: Path) -> None:
    """Remove what ``fill`` wrote."""
    (volume / FILLER).unlink(missing_ok=True)


def free_bytes(volume: Path) -> int:
    """What an unprivileged writer may still write on ``volume``."""
    st = os.statvfs(volume)
    return st.f_bavail * st.f_frsize


@dataclass(frozen=True)
class Volume:
    """A mounted tmpfs; ``queue_dir`` is a directory on it for ``--queue-dir``."""

    root: Path
    size: int

    @property
    def queue_dir(self) -> Path:
        return self.root / "q"


@contextlib.contextmanager
def small_volume(where: Path, size: int) -> Iterator[Volume]:
    """A ``size``-byte tmpfs under ``where``, unmounted afterwards. Fails (rather than
    skips) when it cannot be mounted: these tests prove behaviour on a full volume, and
    nothing else exercises it."""
    root = where / "volume"
    root.mkdir()
    if not mount_tmpfs(root, size):
        raise AssertionError(
            "cannot mount a tmpfs (needs the right to mount, as root in CI's container): "
            "the full-volume tests need a filesystem that really runs out"
        )
    try:
        yield Volume(root, size)
    finally:
        unmount(root)
