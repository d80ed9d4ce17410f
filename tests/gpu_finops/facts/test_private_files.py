"""Private files are 0600 from their creation, whatever the umask leaves open; an older open copy is
narrowed; a file that is already there is never created over (create_private); a symlink is never followed,
and a FIFO or /dev/zero in place of a file never blocks nor reads without end."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gpu_finops.facts.private_files import (
    PRIVATE_MODE,
    NotAPrivateFile,
    TooLarge,
    create_private,
    open_private,
    read_regular,
    refuse_unless_regular,
    write_private,
)


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_written_files_are_0600_from_creation(tmp_path, private_files_only):
    path = tmp_path / "secret"
    write_private(path, b"x" * 100_000)
    assert mode(path) == PRIVATE_MODE == 0o600 and path.read_bytes() == b"x" * 100_000
    write_private(path, b"short")  # replaced, not appended to
    assert path.read_bytes() == b"short" and mode(path) == 0o600


def test_an_older_world_readable_copy_is_narrowed(tmp_path):
    path = tmp_path / "old"
    path.write_bytes(b"from before")
    path.chmod(0o644)
    os.close(open_private(path, os.O_RDONLY))
    assert mode(path) == 0o600 and path.read_bytes() == b"from before"


def test_create_private_never_touches_an_existing_file(tmp_path, private_files_only):
    theirs = tmp_path / "theirs.sqlite"
    theirs.write_bytes(b"another program's")
    before = mode(theirs)
    assert create_private(theirs) is False
    assert theirs.read_bytes() == b"another program's" and mode(theirs) == before == 0o644
    ours = tmp_path / "ours.sqlite"
    assert create_private(ours) is True and mode(ours) == 0o600 and ours.read_bytes() == b""


def test_a_missing_folder_is_an_os_error_not_a_silent_skip(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_private(tmp_path / "no" / "such" / "file", b"x")


def test_a_symlink_is_never_followed_when_writing(tmp_path, private_files_only):
    victim = tmp_path / "victim"
    victim.write_text("theirs\n")
    link = tmp_path / "report.json"
    link.symlink_to(victim)
    with pytest.raises(NotAPrivateFile, match="a symlink, not a regular file") as err:
        write_private(link, b"ours")
    assert err.value.filename == str(link)
    assert victim.read_text() == "theirs\n" and victim.stat().st_mode & 0o777 == 0o644  # not chmodded either
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(NotAPrivateFile):
        write_private(dangling, b"ours")
    assert not (tmp_path / "nowhere").exists()
    with pytest.raises(NotAPrivateFile):
        refuse_unless_regular(link)  # the store's check before sqlite3 opens it by name
    assert create_private(link) is False and victim.read_text() == "theirs\n"


def test_a_fifo_or_a_device_is_refused_without_blocking(tmp_path, private_files_only):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotAPrivateFile, match="a FIFO"):
        write_private(fifo, b"x")  # no reader: opening it blocking would wait for ever
    with pytest.raises(NotAPrivateFile, match="a FIFO"):
        read_regular(fifo, 100)
    with pytest.raises(NotAPrivateFile, match="a special file"):
        write_private(Path("/dev/full"), b"x")
    with pytest.raises(NotAPrivateFile, match="a special file"):
        read_regular(Path("/dev/zero"), 100)
    with pytest.raises(NotAPrivateFile):
        refuse_unless_regular(fifo)


def test_read_regular_stops_at_its_limit(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(TooLarge):
        read_regular(big, 100)
    assert read_regular(big, 101) == b"x" * 101
