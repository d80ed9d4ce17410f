"""Project-wide pytest wiring: the target switch and the markers that depend on it."""

from __future__ import annotations

import os

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


def pytest_configure(config: pytest.Config) -> None:
    target = config.getoption("--target")
    if target not in TARGETS:
        raise pytest.UsageError(f"--target/TARGET must be one of {TARGETS}, got {target!r}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    target = config.getoption("--target")
    for item in items:
        if "live" in item.keywords and target != "aws":
            item.add_marker(
                pytest.mark.skip(reason=f"needs TARGET=aws (a deployed sandbox stack); selected: {target}")
            )
        if "local" in item.keywords and target != "local":
            item.add_marker(
                pytest.mark.skip(reason=f"needs TARGET=local (the rehearsal cluster); selected: {target}")
            )


@pytest.fixture(scope="session")
def target(pytestconfig: pytest.Config) -> str:
    """The selected target: 'aws' or 'local'."""
    return pytestconfig.getoption("--target")
