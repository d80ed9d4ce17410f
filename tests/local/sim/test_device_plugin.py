"""The simulated device plugin reads the config the addons stack ships and does what the real plugin, GFD and
the kubelet would: advertise replicas (renamed, time-sliced or MPS) and MIG slices (single and mixed), label the
node, hand each container free device ids."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from types import SimpleNamespace as NS

import pytest

from gpu_finops.facts.config import load_config
from gpu_finops.facts.kubelet import node_resources
from gpu_finops.model import holding
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


def test_the_shipped_configs_give_whole_cards_by_default_and_replicas_mps_or_mig_where_asked():
    c = load_config()
    configs = {k: parse_config(k, v) for k, v in device_plugin_configs(c).items()}
    assert configs["default"] == Sharing("default", "nvidia.com/gpu", 1)
    assert configs[c.shared_device_config] == Sharing(c.shared_device_config, "nvidia.com/gpu.shared", 4)
    assert configs["mps"] == Sharing("mps", "nvidia.com/gpu.shared", 4, mps=True)
    assert configs["mig-single"] == Sharing("mig-single", "nvidia.com/gpu", 1, mig_strategy="single")
    assert configs["mig-mixed"] == Sharing("mig-mixed", "nvidia.com/gpu", 1, mig_strategy="mixed")


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
    assert ad.devices == {"nvidia.com/gpu.shared": [f"{gpu_uuid('n1', 0)}::{r}" for r in range(4)]}
    whole = advertise("n2", "g6e.12xlarge", Sharing("default", "nvidia.com/gpu", 1), "NVIDIA-L40S")
    assert (
        whole.resources == {"nvidia.com/gpu": "4"}
        and whole.labels["nvidia.com/gpu.sharing-strategy"] == "none"
    )
    (cards,) = whole.devices.values()
    assert len(set(cards)) == 4 and all("::" not in d for d in cards)


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


MPS = "version: v1\nsharing: {mps: {renameByDefault: true, resources: [{name: nvidia.com/gpu, replicas: 4}]}}"


@pytest.mark.parametrize(
    "text, why",
    [
        ("version: v1\nflags: {migStrategy: both}", "migStrategy 'both', expected one of ('none', 'single', 'mixed')"),
        ("version: v1\nflags: {migStrategy: mixed}\n" + MPS.split("\n", 1)[1], "MPS is not supported with migStrategy mixed"),
        ("version: v1\nflags: {migStrategy: single}\n" + MPS.split("\n", 1)[1], "MPS is not supported with migStrategy single"),
        ("version: v1\nsharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 2}]}, "
         "timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}", "both timeSlicing and mps are set"),
    ],
)  # fmt: skip
def test_configs_the_plugin_refuses_for_mig_and_mps_are_refused(text, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        parse_config("x", text)


def test_mps_clients_are_replicas_labelled_mps():
    sharing = parse_config("mps", MPS)
    assert sharing == Sharing("mps", "nvidia.com/gpu.shared", 4, True)
    ad = advertise("n1", "g6e.xlarge", sharing, "NVIDIA-L40S")
    assert (
        ad.labels["nvidia.com/gpu.sharing-strategy"] == "mps"
        and ad.labels["nvidia.com/mps.capable"] == "true"
    )
    assert ad.devices == {"nvidia.com/gpu.shared": [f"{gpu_uuid('n1', 0)}::{r}" for r in range(4)]}
    node = holding.node_gpus(ad.labels, {k: v for k, v in ad.resources.items() if v})
    assert node.offer("nvidia.com/gpu.shared").kind is holding.Kind.MPS_CLIENT and node.advertised == 1


def test_mig_single_cuts_every_card_alike_into_nvidia_com_gpu_slices():
    sharing = parse_config("mig", "version: v1\nflags: {migStrategy: single}")
    ad = advertise("n1", "p5.48xlarge", sharing, "NVIDIA-H100-80GB-HBM3", "all-1g.10gb")
    assert ad.resources == {"nvidia.com/gpu": "56"}
    assert ad.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"
    assert ad.labels["nvidia.com/gpu.count"] == "56" and ad.labels["nvidia.com/mig.config.state"] == "success"
    assert all(d.startswith("MIG-") for d in ad.devices["nvidia.com/gpu"])
    node = holding.node_gpus({**ad.labels, "karpenter.k8s.aws/instance-gpu-count": "8"}, ad.resources)
    assert node.cards == 8 and node.offer("nvidia.com/gpu").share == Fraction(1, 7) and node.advertised == 8


def test_mig_mixed_advertises_a_resource_per_profile_with_gfds_labels_and_withdraws_a_former_layouts():
    sharing = parse_config("mig", "version: v1\nflags: {migStrategy: mixed}")
    was = {"nvidia.com/mig-1g.10gb": "56", "nvidia.com/gpu": "0", "cpu": "192"}
    ad = advertise("n1", "p5.48xlarge", sharing, "NVIDIA-H100-80GB-HBM3", "all-balanced", was)
    assert ad.resources == {
        "nvidia.com/mig-1g.10gb": "16", "nvidia.com/mig-2g.20gb": "8", "nvidia.com/mig-3g.40gb": "8", "nvidia.com/gpu": None
    }  # fmt: skip
    assert (
        ad.labels["nvidia.com/mig-3g.40gb.count"] == "8"
        and ad.labels["nvidia.com/mig-3g.40gb.slices.gi"] == "3"
    )
    assert ad.labels["nvidia.com/mig.strategy"] == "mixed" and ad.labels["nvidia.com/mig.capable"] == "true"
    ids = [d for v in ad.devices.values() for d in v]
    assert len(ids) == len(set(ids)) == 32
    node = holding.node_gpus(
        {**ad.labels, "karpenter.k8s.aws/instance-gpu-count": "8"},
        {k: v for k, v in ad.resources.items() if v},
    )
    assert node.advertised == 8 and node.offer("nvidia.com/mig-2g.20gb").share == Fraction(2, 7)
    again = advertise(
        "n1", "p5.48xlarge", sharing, "NVIDIA-H100-80GB-HBM3", "all-7g.80gb", {**was, **ad.resources}
    )
    assert (
        again.resources["nvidia.com/mig-1g.10gb"] is None and again.resources["nvidia.com/mig-7g.80gb"] == "8"
    )


@pytest.mark.parametrize(
    "itype, layout, why",
    [("g6e.xlarge", "all-1g.10gb", "has no MIG-capable card"), ("p5.48xlarge", "all-9g", "is not one of")],
)
def test_a_layout_the_card_cannot_take_fails_and_leaves_whole_cards(itype, layout, why, caplog):
    sharing = parse_config("mig", "version: v1\nflags: {migStrategy: mixed}")
    ad = advertise("n1", itype, sharing, "NVIDIA", layout)
    assert ad.labels["nvidia.com/mig.config.state"] == "failed" and why in caplog.text
    assert list(ad.devices) == ["nvidia.com/gpu"] and not any(
        d.startswith("MIG-") for d in ad.devices["nvidia.com/gpu"]
    )


def test_mig_single_with_two_profiles_is_invalid_as_gfd_says():
    sharing = parse_config("mig", "version: v1\nflags: {migStrategy: single}")
    ad = advertise("n1", "p5.48xlarge", sharing, "NVIDIA-H100-80GB-HBM3", "all-balanced")
    assert ad.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-INVALID" and ad.resources == {
        "nvidia.com/gpu": "0"
    }


def test_pods_get_distinct_slices_of_the_profile_they_ask_for(tmp_path):
    mig = "version: v1\nflags: {migStrategy: mixed}"
    n = node("mig-1", "mig")
    n.metadata.labels |= {
        "node.kubernetes.io/instance-type": "p5.48xlarge",
        "nvidia.com/mig.config": "all-balanced",
    }
    pods = [pod("a", "mig-1", "nvidia.com/mig-3g.40gb", n=2), pod("b", "mig-1", "nvidia.com/mig-1g.10gb", age=1),
            pod("c", "mig-1", "nvidia.com/mig-3g.40gb", age=2)]  # fmt: skip
    core = FakeCore([n], pods, {"default": "version: v1\n", "mig": mig})
    plugin = DevicePlugin(NS(core=core), Allocations(tmp_path / "alloc.json"))
    plugin.reconcile()
    got = {e["name"]: e["containers"][0]["devices"][0] for e in plugin.pod_resources("mig-1")["podResources"]}
    assert {k: (v["resourceName"], len(v["deviceIds"])) for k, v in got.items()} == {
        "a": ("nvidia.com/mig-3g.40gb", 2), "b": ("nvidia.com/mig-1g.10gb", 1), "c": ("nvidia.com/mig-3g.40gb", 1)
    }  # fmt: skip
    ids = [d for v in got.values() for d in v["deviceIds"]]
    assert len(set(ids)) == 4 and all(holding.device(d).kind is holding.Kind.MIG_SLICE for d in ids)
    labels = {
        k: v for kind, _, b in core.patches if kind == "labels" for k, v in b["metadata"]["labels"].items()
    }
    assert labels["nvidia.com/mig.config.state"] == "success"


def test_the_mps_control_daemon_gives_each_client_its_cards_memory_over_the_clients_in_whole_mib():
    from local.sim.device_plugin import mps_daemon_commands

    # an L40S (46068 MiB) as 4 clients: 11517 MiB each and a quarter of the SMs
    assert mps_daemon_commands(1, 4, 46068) == [
        "set_default_device_pinned_mem_limit 0 11517M",
        "set_default_active_thread_percentage 25",
    ]
    # bytes divided as daemon.go does, floored: 81559 MiB over 2 is 40779.5, written 40779M; one line per card
    eight = mps_daemon_commands(8, 2, 81559)
    assert eight[:2] == [
        "set_default_device_pinned_mem_limit 0 40779M",
        "set_default_device_pinned_mem_limit 1 40779M",
    ]
    assert len(eight) == 9 and eight[-1] == "set_default_active_thread_percentage 50"
    # three clients: 100 // 3 = 33 %, as the Go integer division
    assert mps_daemon_commands(1, 3, 46068)[-1] == "set_default_active_thread_percentage 33"


class FakeCustom:
    """Just enough of CustomObjectsApi for the DRA driver: creates, a second of the same name refused (409)."""

    def __init__(self):
        self.created = {}

    def create_cluster_custom_object(self, group, version, plural, body):
        from kubernetes.client.exceptions import ApiException

        name = body["metadata"]["name"]
        if name in self.created:
            raise ApiException(status=409, reason="AlreadyExists")
        self.created[name] = (group, version, plural, body)


def test_a_dra_node_advertises_no_gpu_resource_and_publishes_its_cards_once_as_the_drivers_slice(tmp_path):
    c = load_config()
    n = node("dra-1")
    n.metadata.labels["gpu-finops.io/gpu-allocation"] = "dra"
    n.metadata.uid = "uid-dra-1"
    core, custom = FakeCore([n], [], device_plugin_configs(c)), FakeCustom()
    plugin = DevicePlugin(NS(core=core, custom=custom), Allocations(tmp_path / "alloc.json"))
    plugin.reconcile()
    (body,) = [b for kind, name, b in core.patches if kind == "status"]
    assert body["status"]["capacity"] == {**KUBELET_CAPACITY, "nvidia.com/gpu": None}  # withdrawn
    assert [k for k, _, _ in core.patches] == ["status"]  # no GFD labels of a device plugin
    classes = {
        n: b["spec"].get("extendedResourceName")
        for n, (*_, p, b) in custom.created.items()
        if p == "deviceclasses"
    }
    assert classes == {
        "gpu.nvidia.com": "nvidia.com/gpu",
        "mig.nvidia.com": None,
        "vfio.gpu.nvidia.com": None,
    }
    ((group, version, plural, s),) = [v for v in custom.created.values() if v[2] == "resourceslices"]
    assert (group, version, plural) == ("resource.k8s.io", "v1", "resourceslices")
    assert s["spec"]["nodeName"] == "dra-1" and s["spec"]["pool"]["name"] == "dra-1"
    assert [d["attributes"]["uuid"]["string"] for d in s["spec"]["devices"]] == [gpu_uuid("dra-1", 0)]
    assert s["metadata"]["ownerReferences"][0]["uid"] == "uid-dra-1"
    plugin.reconcile()  # published already: the 409 is not an error
    assert len(custom.created) == 4  # three DeviceClasses and the slice, each once
