"""One build at a time per cache: `make demo`'s background build holds CACHE/build.lock, and a `local up` that
starts meanwhile says it is waiting and builds only after the lock is released."""

from __future__ import annotations

import fcntl
import threading

from local.build import binaries


def test_build_all_waits_for_the_build_holding_the_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(binaries, "CACHE", tmp_path)
    built: list[str] = []
    monkeypatch.setattr(binaries.Builder, "all", lambda self: built.append("built") or self.out)
    lines: list[str] = []
    with (tmp_path / "build.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiter = threading.Thread(target=binaries.build_all, args=(lines.append,))
        waiter.start()
        waiter.join(timeout=2)
        assert waiter.is_alive() and built == []
        assert lines == [
            f"  waiting for the build already running (lock {tmp_path / 'build.lock'}, log {tmp_path / 'build.log'}) ..."
        ]
        fcntl.flock(held, fcntl.LOCK_UN)
    waiter.join(timeout=10)
    assert not waiter.is_alive() and built == ["built"]


def test_build_all_builds_at_once_when_no_build_holds_the_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(binaries, "CACHE", tmp_path)
    monkeypatch.setattr(binaries.Builder, "all", lambda self: self.out)
    lines: list[str] = []
    assert binaries.build_all(lines.append) == binaries.bin_dir()
    assert lines == []
