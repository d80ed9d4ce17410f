"""The simulated device plugin reads the config the addons stack ships and does what the real plugin, GFD and
the kubelet would: advertise replicas (renamed), label the node, hand each container free device ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace as NS

import pytest

from gpu_finops.facts.config import load_config
from gpu_finops.facts.kubelet import node_resources
from infra.objects.device_plugin import device_plugin_configs
from local.sim.device_plugin import (
    Allocations,
    DevicePlugin,
    Sharing,
    advertise,
    gpu_uuid,
    parse_config,
    same_quantities,
)


def test_the_shipped_configs_give_whole_cards_by_default_and_renamed_replicas_where_asked():
    c = load_config()
    configs = {k: parse_config(k, v) for k, v in device_plugin_configs(c).items()}
    assert configs["default"] == Sharing("default", "nvidia.com/gpu", 1)
    assert configs[c.shared_device_config] == Sharing(c.shared_device_config, "nvidia.com/gpu.shared", 4)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("version: v1\n", Sharing("x", "nvidia.com/gpu", 1)),
        (
            "version: v1\nsharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}",
            Sharing("x", "nvidia.com/gpu", 4),
        ),
        (
            "version: v1\nsharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2, rename: a.b/c}]}}",
            Sharing("x", "a.b/c", 2),
        ),
    ],
)
def test_parse_follows_the_plugins_v1_schema(text, expected):
    assert parse_config("x", text) == expected


@pytest.mark.parametrize(
    "text, why",
    [
        ("version: v2\n", "version 'v2', expected v1"),
        (
            "version: v1\nsharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 0}]}}",
            "replicas 0 < 1",
        ),
    ],
)
def test_parse_refuses_configs_the_plugin_would_refuse(text, why):
    with pytest.raises(ValueError, match=why):
        parse_config("x", text)


def test_advertisement_multiplies_physical_cards_and_withdraws_whole_ones_when_renamed():
    ad = advertise("n1", "g6e.xlarge", Sharing("ts", "nvidia.com/gpu.shared", 4), "NVIDIA-L40S")
    assert ad.resources == {"nvidia.com/gpu.shared": "4", "nvidia.com/gpu": None}
    assert ad.labels["nvidia.com/gpu.count"] == "1" and ad.labels["nvidia.com/gpu.replicas"] == "4"
    assert ad.labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert ad.labels["nvidia.com/gpu.product"] == "NVIDIA-L40S-SHARED"
    assert ad.devices == [f"{gpu_uuid('n1', 0)}::{r}" for r in range(4)]
    whole = advertise("n2", "g6e.12xlarge", Sharing("default", "nvidia.com/gpu", 1), "NVIDIA-L40S")
    assert (
        whole.resources == {"nvidia.com/gpu": "4"}
        and whole.labels["nvidia.com/gpu.sharing-strategy"] == "none"
    )
    assert len(set(whole.devices)) == 4 and all("::" not in d for d in whole.devices)


class FakeCore:
    """Just enough of CoreV1Api for one reconcile: a ConfigMap, nodes and pods, recording patches."""

    def __init__(self, nodes, pods, data):
        self.nodes, self.pods, self.data, self.patches = nodes, pods, data, []

    def read_namespaced_config_map(self, name, ns):
        return NS(data=self.data, metadata=NS(annotations={"gpu-finops.io/default-config": "default"}))

    def list_node(self, resource_version=None):
        return NS(items=self.nodes)

    def list_pod_for_all_namespaces(self, field_selector=None, resource_version=None):
        return NS(items=self.pods)

    def patch_node(self, name, body):
        self.patches.append(("labels", name, body))

    def patch_node_status(self, name, body):
        self.patches.append(("status", name, body))


KUBELET_CAPACITY, KUBELET_ALLOCATABLE = node_resources(
    "g6e.xlarge"
)  # tests/gpu_finops/facts/test_kubelet.py's figures


def node(name, config=None, capacity=None, allocatable=None):
    """A kwok GPU node of one card, by default reporting what the sim's kubelet reports for it."""
    labels = {"node.kubernetes.io/instance-type": "g6e.xlarge"}
    if config:
        labels["nvidia.com/device-plugin.config"] = config
    return NS(
        metadata=NS(name=name, labels=labels, annotations={"kwok.x-k8s.io/node": "fake"}),
        status=NS(
            capacity=capacity or {**KUBELET_CAPACITY, "nvidia.com/gpu": "1"},
            allocatable=allocatable or {**KUBELET_ALLOCATABLE, "nvidia.com/gpu": "1"},
        ),
    )


def pod(name, node_name, resource, n=1, phase="Running", age=0):
    c = NS(name="gpu", resources=NS(limits={resource: str(n)}))
    return NS(
        metadata=NS(
            name=name,
            namespace="ns",
            creation_timestamp=datetime(2026, 11, 30, tzinfo=UTC) + timedelta(seconds=age),
            deletion_timestamp=None,
        ),
        spec=NS(node_name=node_name, containers=[c]),
        status=NS(phase=phase),
    )


def test_reconcile_advertises_per_node_config_and_hands_out_distinct_replicas(tmp_path):
    c = load_config()
    pods = [pod(f"p{i}", "shared-1", "nvidia.com/gpu.shared", age=i) for i in range(5)]
    pods.append(pod("whole", "whole-1", "nvidia.com/gpu"))
    core = FakeCore(
        [node("shared-1", c.shared_device_config), node("whole-1")], pods, device_plugin_configs(c)
    )
    plugin = DevicePlugin(NS(core=core), Allocations(tmp_path / "alloc.json"))
    plugin.reconcile()
    status = {n: b["status"]["capacity"] for kind, n, b in core.patches if kind == "status"}
    assert status["shared-1"] == {**KUBELET_CAPACITY, "nvidia.com/gpu.shared": "4", "nvidia.com/gpu": None}
    assert "whole-1" not in status  # already advertises exactly its one card
    got = plugin.pod_resources("shared-1")["podResources"]
    ids = [d for e in got for c_ in e["containers"] for dev in c_["devices"] for d in dev["deviceIds"]]
    assert len(got) == 4 and len(set(ids)) == 4, got  # the fifth pod finds no free replica
    assert {i.split("::")[0] for i in ids} == {gpu_uuid("shared-1", 0)}
    (whole,) = plugin.pod_resources("whole-1")["podResources"]
    assert whole["containers"][0]["devices"] == [
        {"resourceName": "nvidia.com/gpu", "deviceIds": [gpu_uuid("whole-1", 0)]}
    ]
    # a finished pod gives its replica back; the waiting one gets it on the next pass
    pods[0].status.phase = "Succeeded"
    plugin.reconcile()
    names = {e["name"] for e in plugin.pod_resources("shared-1")["podResources"]}
    assert names == {"p1", "p2", "p3", "p4"}
    assert Allocations(tmp_path / "alloc.json").path.exists()


def test_a_node_karpenters_kwok_provider_made_reports_the_eks_kubelets_cpu_and_memory(tmp_path):
    """kwok's toNode: capacity = the NodeClaim's requests, allocatable = the catalog less 100m and 10Mi."""
    c = load_config()
    requests = {"cpu": "250m", "memory": "256Mi", "pods": "3", "nvidia.com/gpu": "1"}
    kwok_allocatable = {"cpu": "3900m", "memory": "30300Mi", "pods": "58", "ephemeral-storage": "100Gi",
                        "nvidia.com/gpu": "1"}  # fmt: skip
    core = FakeCore(
        [node("karp-1", capacity=requests, allocatable=kwok_allocatable)], [], device_plugin_configs(c)
    )
    DevicePlugin(NS(core=core), Allocations(tmp_path / "alloc.json")).reconcile()
    (body,) = [b for kind, n, b in core.patches if kind == "status"]
    assert body["status"]["capacity"] == {**KUBELET_CAPACITY, "nvidia.com/gpu": "1"}
    assert body["status"]["allocatable"] == {**KUBELET_ALLOCATABLE, "nvidia.com/gpu": "1"}
    assert (body["status"]["capacity"]["cpu"], body["status"]["allocatable"]["cpu"]) == ("4", "3920m")


def test_quantities_are_compared_as_quantities_not_spellings():
    assert same_quantities({"memory": "1Gi", "cpu": "4000m"}, {"memory": "1024Mi", "cpu": "4"})
    assert not same_quantities({"memory": "1Gi"}, {"memory": "1023Mi"})
    assert not same_quantities({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": None})  # to withdraw
    assert not same_quantities({}, {"cpu": "4"})
