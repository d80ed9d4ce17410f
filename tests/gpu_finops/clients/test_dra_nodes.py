"""The collector's node source counts a DRA node's cards from the GPU driver's ResourceSlice: such a node
advertises no nvidia.com/gpu, so where its instance type is not in the catalog (whose GPU count is the other
reading of a node without GPU resources) it would otherwise not be priced at all."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction
from types import SimpleNamespace as NS

from gpu_finops.clients.nodes import KubeNodeSource
from gpu_finops.model.dra import NodeCards
from local.sim import dra_driver


def kube_node(name, capacity=None, itype="x9.gpu"):
    return NS(
        metadata=NS(name=name, labels={"node.kubernetes.io/instance-type": itype},
                    annotations={}, creation_timestamp=datetime(2026, 12, 1, tzinfo=UTC), deletion_timestamp=None),
        status=NS(capacity=capacity or {"cpu": "48"}), spec=NS(provider_id=None),
    )  # fmt: skip


def test_a_dra_node_is_a_gpu_node_of_the_cards_its_slice_publishes_and_a_plain_node_is_not():
    core = NS(
        list_node=lambda: NS(
            items=[
                kube_node("dra-1"),
                kube_node("cpu-1", itype="m5.large"),
                kube_node("dp-1", {"nvidia.com/gpu": "4"}),
            ]
        )
    )
    slices = [dra_driver.resource_slice("dra-1", "u", "g6e.12xlarge", ["GPU-a", "GPU-b", "GPU-c", "GPU-d"])]
    got = {n.name: n.gpu_count for n in KubeNodeSource(core, lambda: slices).gpu_nodes()}
    assert got == {"dra-1": 4, "dp-1": 4}


def test_without_a_slice_reader_only_advertised_gpus_count():
    core = NS(list_node=lambda: NS(items=[kube_node("dra-1")]))
    assert KubeNodeSource(core).gpu_nodes() == []


def test_a_dra_node_of_a_catalog_type_is_read_by_its_slice_and_a_device_plugin_node_ignores_a_stray_slice():
    core = NS(
        list_node=lambda: NS(
            items=[
                kube_node("dra-1", itype="g6e.12xlarge"),
                kube_node("dp-1", {"nvidia.com/gpu": "4"}, "g6e.12xlarge"),
            ]
        )
    )
    slices = [
        dra_driver.resource_slice(
            "dra-1", "u", "g6e.12xlarge", ["GPU-a", "GPU-b"]
        ),  # 2 published, not the catalog's 4
        dra_driver.resource_slice("dp-1", "v", "g6e.12xlarge", ["GPU-c"]),
    ]
    got = {n.name: (n.gpu_count, n.dra) for n in KubeNodeSource(core, lambda: slices).gpu_nodes()}
    assert got == {"dra-1": (2, NodeCards(Fraction(2), Fraction(2))), "dp-1": (4, None)}
