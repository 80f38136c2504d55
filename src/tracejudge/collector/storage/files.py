"""Files the collector creates, created with ``file_mode`` (0600 by default).

The disk queue holds raw span content until it is judged, ``--output`` and the dead-letter
file hold judged spans, verdict lines quote explanations: none of it is for other users of
the machine. Every file the collector creates is therefore opened with ``O_CREAT`` and the
configured mode, never with the umask's default 0666. The process umask still applies on
top (it can only take permissions away), so an operator widens access by asking for it
(``file_mode: 0640``) and a stricter umask still wins. A file that already exists keeps
its mode: the collector never changes the permissions of a file it did not create.
Directories it creates get the same bits plus search (0700 for 0600).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Literal, overload

DEFAULT_FILE_MODE = 0o600


def dir_mode(file_mode: int) -> int:
    """A directory's mode for ``file_mode``: each class that may read may also search."""
    return file_mode | ((file_mode & 0o444) >> 2)


def make_dir(path: Path, file_mode: int) -> None:
    """Create ``path`` and its missing parents with ``dir_mode(file_mode)``."""
    path.mkdir(mode=dir_mode(file_mode), parents=True, exist_ok=True)


def create_private(path: Path, file_mode: int) -> int:
    """Open ``path`` for writing, creating it with ``file_mode``; returns the descriptor."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, file_mode)


@overload
def open_append(path: Path, file_mode: int, binary: Literal[False] = ...) -> IO[str]: ...
@overload
def open_append(path: Path, file_mode: int, binary: Literal[True]) -> IO[bytes]: ...
def open_append(path: Path, file_mode: int, binary: bool = False) -> IO[str] | IO[bytes]:
    """``open(path, "a")`` that creates a missing file with ``file_mode``."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, file_mode)
    try:
        if binary:
            return os.fdopen(fd, "ab")
        return os.fdopen(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def write_new(path: Path, data: bytes, file_mode: int) -> None:
    """Write ``data`` to ``path`` (created with ``file_mode``, truncated if it exists)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, file_mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
