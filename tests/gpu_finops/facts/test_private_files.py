"""Private files are 0600 from their creation, whatever the umask leaves open; an older open copy is
narrowed; a file that is already there is never created over (create_private)."""

from __future__ import annotations

import os
import stat

import pytest

from gpu_finops.facts.private_files import PRIVATE_MODE, create_private, open_private, write_private


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
