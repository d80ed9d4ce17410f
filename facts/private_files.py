"""Files only their owner may read (0600), created with that mode rather than chmodded afterwards: a
file written world-readable and then narrowed can be opened by anyone in between, and whoever opened it
keeps it open. The teardown journal, the cost store, the FOCUS exports and the local CA's keys are ours
alone (account ids, resource ids, spend, signing keys)."""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_MODE = 0o600


def open_private(path: Path, flags: int) -> int:
    """os.open with O_CREAT and mode 0600 (the umask can only narrow it). A file we create is never
    readable by others, not even for a moment; one that was already there is narrowed to 0600 too."""
    fd = os.open(path, flags | os.O_CREAT, PRIVATE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o777 != PRIVATE_MODE:
            os.fchmod(fd, PRIVATE_MODE)  # an older copy written before this rule
    except OSError:
        os.close(fd)
        raise
    return fd


def write_private(path: Path, data: bytes) -> None:
    """Replace the file's content with `data`; the file is 0600 from its creation."""
    fd = open_private(path, os.O_WRONLY | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:  # os.write may write less than asked
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def create_private(path: Path) -> bool:
    """Create an empty 0600 file unless one exists (O_EXCL: never touches a file that is there, which
    may be another program's); True when it created it. For files a library then opens by name
    (sqlite3, whose journal and WAL files copy the main file's mode)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE))
    except FileExistsError:
        return False
    return True
