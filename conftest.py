"""Project-wide pytest wiring: the target switch and the markers that depend on it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TARGETS = ("aws", "local")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--target",
        choices=TARGETS,
        default=os.environ.get("TARGET") or "local",
        help="where live and local tests run: aws (a deployed sandbox stack) or local (the rehearsal "
        "cluster). Default: $TARGET, else local.",
    )
    parser.addoption(
        "--require-all-acts",
        action="store_true",
        default=os.environ.get("GPU_FINOPS_REQUIRE_ALL_ACTS", "") not in ("", "0"),
        help="an act that skips fails instead (the nightly sets it: a skipped act proves nothing). "
        "Default: $GPU_FINOPS_REQUIRE_ALL_ACTS",
    )


def pytest_configure(config: pytest.Config) -> None:
    target = config.getoption("--target")
    if target not in TARGETS:
        raise pytest.UsageError(f"--target/TARGET must be one of {TARGETS}, got {target!r}")


LOCAL_DIR = Path(__file__).resolve().parent / "tests" / "local"
LOCAL_GROUP = "local-target"  # the xdist group of everything that may touch the local target (fixed ports)
NON_LOCAL_NICE = 10  # `make test`'s other worker yields the CPU to the local target's timing-sensitive tests


def _in_local_group(item: pytest.Item) -> bool:
    return LOCAL_DIR in Path(str(item.path)).resolve().parents or item.get_closest_marker("local") is not None


def _distributed(config: pytest.Config) -> bool:
    """In an xdist worker (whose options no longer carry -n), or in a controller that starts workers."""
    if _distributed_worker(config):
        return True
    return getattr(config.option, "dist", "no") != "no" and bool(getattr(config.option, "numprocesses", None))


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the xdist_group marks this adds
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    target = config.getoption("--target")
    if _distributed(config):
        # `make test` runs two workers (`-n 2 --dist loadgroup --no-loadscope-reorder`). Every test that may
        # touch the local target is one group, so one worker runs them in order, as a single run would (one
        # target: its ports are fixed); each other module is a group of its own, so a module's fixtures are
        # set up once. The local group goes first, so it starts at once and the other worker takes the rest.
        for item in items:
            group = LOCAL_GROUP if _in_local_group(item) else item.nodeid.split("::", 1)[0]
            item.add_marker(pytest.mark.xdist_group(group))
        items.sort(key=lambda item: not _in_local_group(item))  # stable: collection order within each part
    for item in items:
        # Markers, not keywords: a keyword also matches a folder name, so every test under tests/local/
        # would count as needing the local target.
        if item.get_closest_marker("live") and target != "aws":
            item.add_marker(
                pytest.mark.skip(reason=f"needs TARGET=aws (a deployed sandbox stack); selected: {target}")
            )
        if item.get_closest_marker("local") and target != "local":
            item.add_marker(
                pytest.mark.skip(reason=f"needs TARGET=local (the rehearsal cluster); selected: {target}")
            )


@pytest.fixture(scope="session")
def target(pytestconfig: pytest.Config) -> str:
    """The selected target: 'aws' or 'local'."""
    return pytestconfig.getoption("--target")


ACTS_DIR = Path(__file__).resolve().parent / "acts"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """With --require-all-acts, an act's skip becomes a failure that quotes the skip reason."""
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and item.config.getoption("--require-all-acts")):
        return
    if ACTS_DIR not in Path(str(item.path)).resolve().parents:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"--require-all-acts: {item.nodeid} was skipped, and a run that skips an act proves nothing about "
        f"its claim. Skip reason: {reason}"
    )


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Before a test's own timeout starts (pytest-timeout's clock covers its fixtures): the local target's Go
    binaries, for a test marked `binaries` or under tests/local. On a cold cache that is a 13-minute build
    (or the wait for the one `make test`'s prebuild started), which no test's timeout is sized for; once
    built it is a cache lookup. And on a worker that runs no local-group test, a lower CPU priority."""
    local = (
        LOCAL_DIR in Path(str(item.path)).resolve().parents and item.config.getoption("--target") == "local"
    )
    if local or item.get_closest_marker("binaries") is not None:
        _binaries_built()
    global _ran_local
    if _in_local_group(item):
        _ran_local = True
    elif _distributed_worker(item.config) and not _niced and not _ran_local:
        _nice_once()  # a worker that started the local target keeps its priority
    yield


_built = False
_niced = False
_ran_local = False


def _binaries_built() -> None:
    global _built
    if _built:
        return
    from local.build.binaries import build_all

    _built = True  # once per worker, built or not
    try:
        build_all(echo=lambda line: None)  # its progress is in the build log
    except Exception:  # the test's own fixture builds again and fails with the build's message
        return


def _distributed_worker(config: pytest.Config) -> bool:
    """xdist gives its workers' config a `workerinput`; the environment (PYTEST_XDIST_WORKER) is inherited by
    every pytest a worker's test starts, so it does not tell."""
    return hasattr(config, "workerinput")


def _nice_once() -> None:
    global _niced
    _niced = True
    os.nice(NON_LOCAL_NICE)
