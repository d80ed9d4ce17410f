"""Files only their owner may read (0600), created with that mode rather than chmodded afterwards: a
file written world-readable and then narrowed can be opened by anyone in between, and whoever opened it
keeps it open. The teardown journal, the cost store, the FOCUS exports and the local CA's keys are ours
alone (account ids, resource ids, spend, signing keys)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

PRIVATE_MODE = 0o600
# Never through a symlink (someone's link would have us write, or chmod, the file it points at), never
# blocking on a FIFO (O_NONBLOCK has no effect on a regular file):.
_SAFE = os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class NotAPrivateFile(OSError):
    """The path is a symlink, a FIFO, a device or a directory: not a file we may write our data into, or
    read our input from (a FIFO blocks, /dev/zero never ends). Its `filename` names the path."""


def _refuse(path: Path, what: str, doing: str = "write private data through it") -> NotAPrivateFile:
    return NotAPrivateFile(errno.EINVAL, f"{what}, not a regular file: refusing to {doing}", str(path))


class TooLarge(OSError):
    """An input file larger than its reader's limit (read no further)."""


def open_regular(path: Path) -> BinaryIO:
    """A regular file opened for reading, never blocking on a FIFO: opened without
    waiting, then checked to be a regular file before a byte is read (NotAPrivateFile otherwise).
    Symlinks are followed (an input may be one)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, "a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode)
                          else "a special file", "read it")  # fmt: skip
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, limit: int) -> bytes:
    """A regular file's bytes (`open_regular`), at most `limit` of them: TooLarge beyond, read no further
    (/dev/zero, or a file that grew since its size was checked)."""
    with open_regular(path) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(errno.EFBIG, f"larger than {limit} bytes, the most it may be", str(path))
    return data


def open_private(path: Path, flags: int) -> int:
    """os.open with O_CREAT and mode 0600 (the umask can only narrow it). A file we create is never
    readable by others, not even for a moment; one that was already there is narrowed to 0600 too. A
    symlink, FIFO or other non-regular file at `path` is refused (NotAPrivateFile), never followed."""
    try:
        fd = os.open(path, flags | os.O_CREAT | _SAFE, PRIVATE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENXIO and stat.S_ISFIFO(os.lstat(path).st_mode)):
            raise _refuse(path, "a symlink" if exc.errno == errno.ELOOP else "a FIFO") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, "a FIFO" if stat.S_ISFIFO(mode) else "a special file")
        if mode & 0o777 != PRIVATE_MODE:
            os.fchmod(fd, PRIVATE_MODE)  # an older copy written before this rule
        if flags & os.O_NONBLOCK == 0:
            os.set_blocking(fd, True)
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
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _SAFE, PRIVATE_MODE))
    except FileExistsError:  # O_EXCL with a symlink there (even a dangling one) lands here too
        return False
    return True


def refuse_unless_regular(path: Path) -> None:
    """For files a library opens by name (sqlite3): a symlink or a non-regular file at `path` is refused
    (NotAPrivateFile); nothing there, or a regular file, passes."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise _refuse(path, "a symlink")
    if not stat.S_ISREG(mode):
        raise _refuse(path, "a FIFO" if stat.S_ISFIFO(mode) else "a special file")
