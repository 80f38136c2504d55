"""Room on the disk queue's volume: the default cap, and the reserve that lets a full
volume recover.

SQLite in WAL mode writes every change, deletes included, to the WAL first, and returns
the WAL's space only when a checkpoint has copied it into the database file. On a full
volume a queue could therefore neither delete the rows its backends had acknowledged nor
shrink: it stayed full for good, across restarts (issue 18). Two things prevent that:

- **A cap by default.** Without ``max_disk_queue_bytes`` the database is capped at half
  of what it may occupy (its own size plus the volume's free space at start), so the
  queue alone never fills its volume: the other half is room for the WAL, its
  checkpoints and whatever else shares the volume.
- **A reserve.** ``queue.reserve`` beside the database holds ``reserve_bytes`` of real
  blocks. When something else has taken the rest of the volume and a delete of delivered
  rows fails, the store frees the reserve, deletes, checkpoints the WAL to nothing, and
  takes the reserve back once there is room. A request is accepted only while the reserve
  is in place, so deleting is always possible.
"""

from __future__ import annotations

import contextlib
import errno
import os
from dataclasses import dataclass
from pathlib import Path

from tracejudge.collector.storage.files import create_private

RESERVE_NAME = "queue.reserve"
"""The reserve file's name in the queue directory."""

MIN_CAP = 64 * 1024
"""The smallest cap (``max_disk_queue_bytes`` refuses less)."""

DEFAULT_SHARE = 0.5
"""The share of the volume's free space a queue without a configured cap may take."""

_PAGE = 4096
_WAL_PAGES = (16, 1000)
"""Bounds of the WAL's checkpoint size in pages (a quarter of the cap in between)."""


def wal_pages(max_bytes: int, page_size: int = _PAGE) -> int:
    """Pages the WAL may hold before a checkpoint (and keeps after one): a quarter of the
    cap, between 16 and 1,000 pages (64 KiB and 4 MiB at 4 KiB pages)."""
    low, high = _WAL_PAGES
    return max(low, min(high, max_bytes // page_size // 4))


def reserve_for(max_bytes: int, page_size: int = _PAGE) -> int:
    """The reserve for a cap: twice the WAL's checkpoint size, enough for the frames a
    delete writes and for a checkpoint that must grow the database by a full WAL."""
    return 2 * wal_pages(max_bytes, page_size) * page_size


def volume_free(path: Path) -> int:
    """Bytes an unprivileged process may still write on ``path``'s volume."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@dataclass(frozen=True, slots=True)
class Room:
    """How much of its volume a disk queue may use."""

    max_bytes: int
    """The cap on the database file (SQLite ``max_page_count``)."""
    reserve_bytes: int
    derived: bool
    """True when the cap was derived from the free space (no ``max_disk_queue_bytes``)."""
    may_occupy: int
    """The database's size plus the volume's free space at start (with the queue's WAL
    and reserve): the most the queue could take."""

    def describe(self) -> str:
        """How the cap was chosen, for the start-up log."""
        if not self.derived:
            return f"capped at {_mib(self.max_bytes)} (max_disk_queue_bytes)"
        return (
            f"capped at {_mib(self.max_bytes)}, half of the {_mib(self.may_occupy)} it may "
            "occupy on its volume (its database and the free space at start; set "
            "max_disk_queue_bytes to choose)"
        )


def plan_room(directory: Path, max_bytes: int | None, database: str) -> Room:
    """The cap and reserve for the queue in ``directory`` (which exists): ``max_bytes``
    when given, else ``DEFAULT_SHARE`` of what the queue could occupy: the database file,
    the free space, and the queue's own WAL and reserve (both shrink back), less the
    reserve. Counting the database's own size keeps the cap the same across restarts (a
    database that filled half the volume does not earn half of the rest at the next start);
    a database already larger keeps its size and takes no more until it drains."""
    db = _size(directory / database)
    free = volume_free(directory) + _size(Path(f"{directory / database}-wal"))
    free += _size(directory / RESERVE_NAME)
    if max_bytes is not None:
        return Room(max_bytes, reserve_for(max_bytes), False, db + free)
    reserve = reserve_for(max(MIN_CAP, int((db + free) * DEFAULT_SHARE)))
    cap = max(MIN_CAP, int(max(0, db + free - reserve) * DEFAULT_SHARE))
    return Room(cap, reserve, True, db + free)


def _mib(n: int) -> str:
    return f"{n / 1024**2:.1f} MiB"


def _allocate(fd: int, size: int) -> None:
    """Give the file ``size`` bytes of real blocks (a sparse file would reserve nothing)."""
    if hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, 0, size)
            return
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
    chunk = memoryview(b"\0" * 65536)  # no fallocate (macOS, some filesystems): zeros
    os.lseek(fd, 0, os.SEEK_SET)
    left = size
    while left:
        left -= os.write(fd, chunk[: min(len(chunk), left)])


class Reserve:
    """``size`` bytes of real blocks in ``path``, given back to the volume when a delete
    needs them and taken again when there is room."""

    def __init__(self, path: Path, size: int, file_mode: int) -> None:
        self.path = path
        self.size = size
        self.file_mode = file_mode
        self.present = size == 0 or _size(path) >= size
        """True while the reserve holds its bytes (always, for a size of 0)."""

    def ensure(self) -> bool:
        """Take the reserve when it is missing and the volume has room; True if in place."""
        if self.present:
            return True
        if volume_free(self.path.parent) < self.size:
            return False
        try:
            fd = create_private(self.path, self.file_mode)
            try:
                _allocate(fd, self.size)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            with contextlib.suppress(OSError):
                self.path.unlink()
            return False
        self.present = True
        return True

    def release(self) -> bool:
        """Give the reserve's space back to the volume; False when there was none to give."""
        if self.size == 0 or not self.present:
            return False
        self.present = False
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True
