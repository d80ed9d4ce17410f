"""Helm is built once per cache: a caller that finds a build running waits for it and uses its binary."""

from __future__ import annotations

import fcntl
import threading
import time

from local.build import binaries as build
from local.charts import helm


def test_a_caller_waits_for_the_running_build_and_uses_its_binary(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(build, "CACHE", tmp_path)
    built: list[list[str]] = []
    monkeypatch.setattr(
        build, "run", lambda cmd, cwd, log: built.append(cmd)
    )  # a second build would show here
    path = helm.helm_path()
    path.parent.mkdir(parents=True)
    with (tmp_path / "helm.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the prebuild's build, running

        def finish() -> None:
            time.sleep(0.5)
            path.write_text("#!/bin/sh\n")
            path.chmod(0o755)
            fcntl.flock(lock, fcntl.LOCK_UN)

        threading.Thread(target=finish).start()
        began = time.monotonic()
        assert helm.ensure_helm() == path
    assert time.monotonic() - began >= 0.4, "it waited for the build"
    assert built == [], "and did not build helm a second time"
    assert "waiting for the helm build already running" in capsys.readouterr().err
