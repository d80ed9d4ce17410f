"""Every DaemonSet the device plugin chart installs tolerates every taint our GPU NodePools put on their
nodes: without the NFD worker there, the NVIDIA PCI label never appears, the device plugin's and GFD's
node affinity never match, and no GPU is ever advertised.

Tested on the values the addons stack synthesizes, merged over the chart's defaults as Helm merges them
(a list we set replaces the chart's). The chart itself is not rendered here: local/chart_render.py renders
only the charts that come in Go modules already in the module cache (Karpenter, Kueue); the device
plugin's chart source is not among them."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_finops.facts.config import load_config
from gpu_finops.facts.kube_keys import GPU_RESOURCE

C = load_config()

# The nvidia-device-plugin chart's own defaults (deployments/helm/nvidia-device-plugin/values.yaml) for
# the tolerations of its three DaemonSets: the device plugin and GFD share the top-level list; the
# bundled node-feature-discovery worker has its own, which tolerates only nvidia.com/gpu=present.
CHART_DEFAULTS: dict[str, Any] = {
    "tolerations": [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
    ],
    "nfd": {
        "worker": {
            "tolerations": [
                {
                    "key": "node-role.kubernetes.io/master",
                    "operator": "Equal",
                    "value": "",
                    "effect": "NoSchedule",
                },
                {"key": GPU_RESOURCE, "operator": "Equal", "value": "present", "effect": "NoSchedule"},
            ]
        }
    },
}
DAEMONSETS = {  # DaemonSet -> where its tolerations come from in the values
    "nvidia-device-plugin": ("tolerations",),
    "gpu-feature-discovery": ("tolerations",),
    "node-feature-discovery-worker": ("nfd", "worker", "tolerations"),
}


def merged(defaults: Any, ours: Any) -> Any:
    """Helm's values merge: maps merge key by key, anything else (lists included) is replaced."""
    if isinstance(defaults, dict) and isinstance(ours, dict):
        return {k: merged(defaults.get(k), ours[k]) if k in ours else defaults[k] for k in defaults | ours}
    return ours


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """Kubernetes' rule (k8s.io/api/core/v1 Toleration.ToleratesTaint)."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return toleration.get("value", "") == taint.get("value", "")


def untolerated(values: dict[str, Any], taints: list[dict[str, Any]]) -> list[str]:
    """Each DaemonSet that cannot run on a GPU node, with the taint that keeps it off."""
    out = []
    for ds, path in DAEMONSETS.items():
        tols = values
        for key in path:
            tols = (tols or {}).get(key)
        for t in taints:
            if not any(tolerates(tol, t) for tol in tols or []):
                out.append(
                    f"{ds}: no toleration in {'.'.join(path)} {tols} tolerates {t['key']}={t.get('value', '')}:{t['effect']}"
                )
    return out


@pytest.fixture(scope="module")
def gpu_taints(synthesized) -> list[dict[str, Any]]:
    pools = [d for d in synthesized.chart_docs("karpenter.yaml") if d["kind"] == "NodePool"]
    every = [t for p in pools for t in p["spec"]["template"]["spec"].get("taints", [])]
    taints = [t for i, t in enumerate(every) if t not in every[:i]]  # both pools set the same taint
    assert taints, "the GPU NodePools set no taint: this test would prove nothing"
    return taints


@pytest.fixture(scope="module")
def device_plugin_values(synthesized) -> dict[str, Any]:
    release = synthesized.stack("addons")["resource"]["helm_release"]["nvidia-device-plugin"]
    return yaml.safe_load(release["values"][0])


def test_every_device_plugin_daemonset_tolerates_the_gpu_nodes_taints(device_plugin_values, gpu_taints):
    assert untolerated(merged(CHART_DEFAULTS, device_plugin_values), gpu_taints) == []


def test_the_charts_own_nfd_worker_tolerations_keep_it_off_our_gpu_nodes(gpu_taints):
    """What main shipped: the chart's default NFD worker tolerations, nvidia.com/gpu=present only."""
    assert untolerated(CHART_DEFAULTS, gpu_taints) == [
        "node-feature-discovery-worker: no toleration in nfd.worker.tolerations "
        f"{CHART_DEFAULTS['nfd']['worker']['tolerations']} tolerates nvidia.com/gpu=true:NoSchedule"
    ]


@pytest.mark.parametrize(
    "toleration, want",
    [
        ({"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": GPU_RESOURCE, "operator": "Exists"}, True),  # no effect: every effect
        ({"operator": "Exists"}, True),  # no key with Exists: every taint
        ({"key": GPU_RESOURCE, "operator": "Equal", "value": "true", "effect": "NoSchedule"}, True),
        ({"key": GPU_RESOURCE, "value": "true"}, True),  # Equal is the default operator
        ({"key": GPU_RESOURCE, "operator": "Equal", "value": "present", "effect": "NoSchedule"}, False),
        ({"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, False),
    ],
)
def test_toleration_matching_follows_kubernetes(toleration, want):
    assert tolerates(toleration, {"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}) is want


def test_a_list_we_set_replaces_the_charts_and_maps_merge():
    assert merged({"a": [1], "m": {"x": 1, "y": 2}}, {"a": [2], "m": {"y": 3}}) == {
        "a": [2],
        "m": {"x": 1, "y": 3},
    }
