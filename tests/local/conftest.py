"""The local rehearsal target for tests/local: started once per session (the first module that needs it
brings it up, the session's end takes it down), and put back as shipped after each module that used it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.local.act_runs import restore_target

log = logging.getLogger(__name__)


@pytest.fixture(scope="session")
def local_target_up() -> Iterator[Any]:
    from local.cluster.lifecycle import LocalCluster, LocalError

    cluster = LocalCluster()
    try:
        cluster.up()
    except LocalError as exc:
        cluster.down()
        pytest.fail(f"the local target did not come up: {exc}")
    yield cluster
    cluster.down()
    assert not any(cluster.status().values()), "local down left processes running"


@pytest.fixture(scope="module")
def local_cluster(local_target_up: Any) -> Iterator[Any]:
    """The running local target; after the module, whatever its acts left is undone (restore_target)."""
    yield local_target_up
    for change in restore_target(local_target_up):
        log.warning("after this module: %s", change)
