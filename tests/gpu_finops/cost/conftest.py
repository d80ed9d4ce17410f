"""A real Prometheus (Debian's package) scraping the DCGM simulator, on free loopback ports."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpu_finops.clients.nodes import GpuNode
from gpu_finops.dcgm.metrics_csv import PROJECT_METRICS
from gpu_finops.facts import dcgm
from local.cluster.prometheus_server import PrometheusServer
from local.sim.dcgm_sim import DcgmSimulator, SimGpu


@pytest.fixture(scope="module")
def sim() -> Iterator[DcgmSimulator]:
    simulator = DcgmSimulator(r.field for r in PROJECT_METRICS)
    server = simulator.serve()
    simulator.port = server.server_port  # type: ignore[attr-defined]
    yield simulator
    server.shutdown()


@pytest.fixture(scope="module")
def prometheus(sim: DcgmSimulator, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    workdir: Path = tmp_path_factory.mktemp("prometheus")
    with PrometheusServer(workdir, [f"127.0.0.1:{sim.port}"], scrape_interval="1s") as server:  # type: ignore[attr-defined]
        yield server


def gpu(
    host: str,
    index: int,
    *,
    util: float | None = 100.0,
    sm: float | None = 0.4582,
    occ: float = 0.3,
    power: float = 180.0,
    clock: float = 1980.0,
) -> SimGpu:
    values = {dcgm.POWER_USAGE: power, dcgm.SM_CLOCK: clock, dcgm.SM_OCCUPANCY: occ}
    if util is not None:
        values[dcgm.GPU_UTIL] = util
    if sm is not None:
        values[dcgm.SM_ACTIVE] = sm
    return SimGpu(hostname=host, index=index, uuid=f"GPU-{host}-{index}", values=values)


def node(
    name: str,
    *,
    instance_type: str = "g6e.xlarge",
    capacity: str = "on-demand",
    gpus: int = 1,
    age: timedelta = timedelta(hours=1),
    now: datetime | None = None,
    deleted: datetime | None = None,
    nodepool: str = "gpu-spot",
    annotations: dict[str, str] | None = None,
) -> GpuNode:
    now = now or datetime.now(UTC)
    return GpuNode(
        name=name,
        instance_type=instance_type,
        capacity_type=capacity,
        zone="us-east-1a",
        nodepool=nodepool,
        instance_id=f"i-{abs(hash(name)) % 10**12:012x}",
        gpu_count=gpus,
        created=now - age,
        deleted=deleted,
        annotations=annotations or {},
    )


class FakeNodes:
    """The Kubernetes boundary for collector tests: a list of GpuNode the test controls."""

    def __init__(self, nodes: list[GpuNode]):
        self.nodes = nodes

    def gpu_nodes(self) -> list[GpuNode]:
        return list(self.nodes)
