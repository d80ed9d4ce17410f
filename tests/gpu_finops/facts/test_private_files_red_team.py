"""Red-team F18 (private files followed symlinks), F17/F9/F10 (a FIFO blocked, /dev/zero read without end)
and the 0600 rule for the reports: each fails on the code before this change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpu_finops.facts.private_files import (
    NotAPrivateFile,
    TooLarge,
    create_private,
    read_regular,
    refuse_unless_regular,
    write_private,
)


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
