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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    target = config.getoption("--target")
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
