"""`make test` on two workers (conftest.py): the local target's tests on one worker, in order, started first;
every other module on the other worker, at a lower CPU priority; and the Go binaries built (or awaited)
before a test's timeout clock starts, not inside it."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from local.build import binaries

ROOT = Path(__file__).resolve().parents[1]
PROBE = textwrap.dedent("""
    import json, os, time
    from pathlib import Path

    def record(name):
        with open(os.environ["PROBE_LOG"], "a") as f:
            f.write(json.dumps({"test": name, "worker": os.environ.get("PYTEST_XDIST_WORKER"),
                                "nice": os.nice(0), "t": time.monotonic()}) + "\\n")
""")


def _tree(tmp_path: Path) -> Path:
    """A project folder: the project's own conftest.py, tests/local/ with three tests, and two other modules in
    tests/a_first/, which pytest collects before tests/local/."""
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text())
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n  live: x\n  local: x\n  binaries: x\n  slow: x\n"
    )
    (tmp_path / "probe.py").write_text(PROBE)
    local = tmp_path / "tests" / "local"
    local.mkdir(parents=True)
    (local / "test_first.py").write_text(
        "from probe import record\n" + "".join(f"def test_l{i}():\n    record('local {i}')\n" for i in (1, 2))
    )
    (local / "test_second.py").write_text("from probe import record\ndef test_l3():\n    record('local 3')\n")
    (tmp_path / "tests" / "a_first").mkdir()
    for name in ("test_a", "test_b"):
        (tmp_path / "tests" / "a_first" / f"{name}.py").write_text(
            "import time\nfrom probe import record\n"
            + "".join(f"def test_{i}():\n    time.sleep(0.2)\n    record('{name} {i}')\n" for i in range(4))
        )
    return tmp_path


def _pytest(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--target=aws", *args],
        capture_output=True,
        text=True,
        cwd=folder,
        # as a test of `make test` runs, inside an xdist worker: its PYTEST_XDIST_* variables are inherited
        env={**os.environ, "PYTHONPATH": str(folder), **(env or {})},
        timeout=300,
    )


def test_the_local_tests_run_first_in_order_on_one_worker_and_the_rest_on_the_other_niced(tmp_path):
    folder = _tree(tmp_path)
    log = tmp_path / "probe.jsonl"
    done = _pytest(
        folder, "-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder", env={"PROBE_LOG": str(log)}
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    local = [r for r in rows if r["test"].startswith("local")]
    other = [r for r in rows if not r["test"].startswith("local")]
    assert [r["test"] for r in local] == ["local 1", "local 2", "local 3"]  # collection order
    (local_worker,) = {r["worker"] for r in local}
    # collected after tests/a_first/, yet the first its worker ran
    assert next(r for r in rows if r["worker"] == local_worker)["test"] == "local 1", rows
    base = os.nice(0)  # this process's own: `make test`'s other worker runs this test at 10 already
    assert all(r["nice"] == base for r in local), local  # the local target's worker keeps its priority
    # the other worker took the other modules, at the lower priority, while the local group ran
    first_other = [r for r in other if r["worker"] != local_worker]
    assert first_other and all(r["nice"] == min(base + 10, 19) for r in first_other), other
    assert min(r["t"] for r in first_other) < max(r["t"] for r in local) + 1.0


def test_without_workers_nothing_is_regrouped_reordered_or_niced(tmp_path):
    folder = _tree(tmp_path)
    log = tmp_path / "probe.jsonl"
    # started from a test that an xdist worker runs: the worker's variables are in its environment
    done = _pytest(
        folder, env={"PROBE_LOG": str(log), "PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2"}
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    names = [r["test"] for r in rows]
    assert names[:2] == ["test_a 0", "test_a 1"] and names[8:] == ["local 1", "local 2", "local 3"], names
    assert {r["nice"] for r in rows} == {os.nice(0)}  # no worker here lowered its own priority


def _fake_binaries(cache: Path) -> None:
    """Every binary in place under the key the build would use, so build_all has nothing to build."""
    out = cache / "local" / "bin" / "set" / binaries.cache_key()
    out.mkdir(parents=True)
    for name in binaries.MAINS:
        (out / name).write_text("#!/bin/sh\n")
        (out / name).chmod(0o755)


def _hold_build_lock(cache: Path, seconds: float) -> threading.Thread:
    lock_path = cache / "local" / "build.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    f = lock_path.open("w")
    fcntl.flock(f, fcntl.LOCK_EX)

    def release() -> None:
        time.sleep(seconds)
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()

    t = threading.Thread(target=release)
    t.start()
    return t


@pytest.mark.parametrize(
    ("marked", "passes"),
    [(True, True), (False, False)],
    ids=["marked-binaries: the wait is before the clock", "unmarked: the wait counts, and times out"],
)
def test_a_binaries_test_waits_for_the_build_before_its_timeout_starts(tmp_path, marked, passes):
    folder = _tree(tmp_path)
    cache = tmp_path / "cache"
    _fake_binaries(cache)
    mark = "@pytest.mark.binaries\n" if marked else ""
    (folder / "tests" / "test_needs_go.py").write_text(
        "import pytest\nfrom local.build.binaries import build_all\n\n"
        "@pytest.fixture\ndef bins():\n    return build_all(echo=lambda line: None)\n\n"
        f"{mark}@pytest.mark.timeout(8)\ndef test_uses_the_binaries(bins):\n    assert (bins / 'etcd').is_file()\n"
    )
    holder = _hold_build_lock(
        cache, 20.0
    )  # a build (the prebuild) still running for 20 s (pytest starts in ~5)
    try:
        done = _pytest(folder, "tests/test_needs_go.py", env={"GPU_FINOPS_CACHE": str(cache)})
    finally:
        holder.join()
    out = done.stdout + done.stderr
    if passes:
        assert done.returncode == 0 and "1 passed" in out, out[-3000:]
    else:
        assert done.returncode == 1 and "Timeout (>8.0s)" in out, out[-3000:]
