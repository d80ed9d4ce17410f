"""The DaemonSets the addons stack installs on GPU nodes, rendered by the real Helm with the values the stack
passes, applied to a real kube-apiserver and placed (or not) by the real DaemonSet controller and
kube-scheduler on a kwok node shaped like our AWS GPU node (local/charts/gpu_node.py), stage by stage.

Chart sources that can be had here:
- NVIDIA device plugin: `github.com/NVIDIA/k8s-device-plugin@v0.18.0` (the Go module proxy serves that
  version, not our pinned chart 0.20.0), `deployments/helm/nvidia-device-plugin`, with its bundled
  node-feature-discovery chart 0.17.3 (`charts/*.tgz`). What this proves for 0.20.0: that our values
  (tolerations for the device plugin, GFD and NFD worker; `gfd.enabled`, `nfd.enabled`) are read under the
  same keys and produce DaemonSets the scheduler places on our node, *if* 0.20.0's templates and defaults
  use those keys as 0.18.0's do (docs/infra.md records 0.20.0's values.yaml keys, checked by hand, and its
  NFD subchart moved to OCI at 0.19.0). What it does not prove: 0.20.0's own templates, its NFD subchart
  version's defaults (worker tolerations, affinity), or any label the newer NFD/GFD write.
- dcgm-exporter: its module is not served (the proxy answers 403 for github.com/NVIDIA/dcgm-exporter), so
  no chart renders here. Its DaemonSet is a stand-in carrying exactly the scheduling fields of our values
  (`tolerations`, `affinity`, `nodeSelector`, assumed to reach the pod spec unchanged: the chart's own
  template, which could add or drop any of them, is not exercised).

A DaemonSet that does not land gets no pod at all (the DaemonSet controller runs the scheduler's taint and
node-affinity predicates itself), so the reason is asked of the real scheduler: a probe pod built as the
DaemonSet controller builds its pods (the template, pinned to the node by a `metadata.name` field
affinity, with the controller's default tolerations) and its `PodScheduled` condition's message.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpu_finops.facts.config import Config
from local.charts.chart_inputs import Release, releases
from local.charts.chart_render import helm_template, module_dir

DEVICE_PLUGIN_MODULE = "github.com/NVIDIA/k8s-device-plugin@v0.18.0"
DEVICE_PLUGIN_CHART = "deployments/helm/nvidia-device-plugin"
_CLUSTER_KINDS = {"ClusterRole", "ClusterRoleBinding", "Namespace", "CustomResourceDefinition"}
_SKIP = {"Job"}  # helm hooks (NFD's post-delete job)
# DaemonSet name -> the first stage at which it must run on a GPU node (None: must never run there).
# The device plugin and GFD select on NFD's NVIDIA PCI label; MPS' daemon on GFD's mps.capable=true, which
# our configs (time-slicing, no MPS) never produce.
EXPECTED = {
    "nvidia-device-plugin": "nfd",
    "nvidia-device-plugin-gpu-feature-discovery": "nfd",
    "nvidia-device-plugin-node-feature-discovery-worker": "launched",
    "nvidia-device-plugin-mps-control-daemon": None,
    "dcgm-exporter": "launched",
}
# What the DaemonSet controller adds to every pod it makes (pkg/controller/daemon/util AddOrUpdate...).
DS_TOLERATIONS = [
    {"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": e}
    for k, e in (
        ("not-ready", "NoExecute"),
        ("unreachable", "NoExecute"),
        ("disk-pressure", "NoSchedule"),
        ("memory-pressure", "NoSchedule"),
        ("pid-pressure", "NoSchedule"),
        ("unschedulable", "NoSchedule"),
    )
]


def device_plugin_chart() -> Path:
    return module_dir(DEVICE_PLUGIN_MODULE) / DEVICE_PLUGIN_CHART


def dcgm_stand_in(release: Release) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for text in release.values:
        values |= yaml.safe_load(text) or {}
    pod_spec: dict[str, Any] = {
        "containers": [{"name": "exporter", "image": f"dcgm-exporter:{values.get('image', {}).get('tag')}"}]
    }
    for key in ("tolerations", "affinity", "nodeSelector"):
        if values.get(key):
            pod_spec[key] = values[key]
    labels = {"app.kubernetes.io/name": "dcgm-exporter"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "dcgm-exporter", "namespace": release.namespace},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def render(c: Config, outdir: Path, work: Path, values_patch: dict[str, Any] | None = None) -> list[dict]:
    """Every object of the device plugin chart (v0.18.0) with the stack's values, and dcgm-exporter's
    stand-in DaemonSet. `values_patch` is merged last (a near miss: the chart's own NFD tolerations)."""
    from local.charts.helm import ensure_helm

    addons = json.loads((outdir / "stacks" / "addons" / "cdk.tf.json").read_text())
    rel = releases(addons, c, [])
    dp = rel["nvidia-device-plugin"]
    if values_patch is not None:
        dp = Release(
            dp.name, dp.chart, dp.version, dp.namespace, (*dp.values, yaml.safe_dump(values_patch)), dp.sets
        )
    kube_version = f"v{c.versions.kubernetes}.0"
    docs = helm_template(ensure_helm(), device_plugin_chart(), dp, kube_version, work)
    for d in docs:  # helm template leaves a namespaced object's namespace to the install
        if d.get("kind") not in _CLUSTER_KINDS:
            d.setdefault("metadata", {}).setdefault("namespace", dp.namespace)
    return [*docs, dcgm_stand_in(rel["dcgm-exporter"])]


@dataclass
class Placement:
    """Per stage: DaemonSet -> the node's pod phase, or the scheduler's reason it cannot go there."""

    landed: dict[str, dict[str, str]] = field(default_factory=dict)
    refused: dict[str, dict[str, str]] = field(default_factory=dict)

    def misplaced(
        self, expected: dict[str, str | None] = EXPECTED, stages: tuple[str, ...] = ("launched", "nfd", "gfd")
    ) -> list[str]:
        """Each DaemonSet that did not land where it must, or landed where it must not, with the reason."""
        out = []
        for i, stage in enumerate(stages):
            for ds, first in expected.items():
                must = first in stages and stages.index(first) <= i
                if must and ds not in self.landed.get(stage, {}):
                    why = self.refused.get(stage, {}).get(ds, "no DaemonSet of that name was rendered")
                    out.append(f"{stage}: {ds} did not land on the GPU node: {why}")
                if not must and ds in self.landed.get(stage, {}):
                    out.append(f"{stage}: {ds} landed on the GPU node, expected only from stage {first}")
        return out


def _is_daemonset(d: dict[str, Any]) -> bool:
    return d.get("kind") == "DaemonSet"


def probe_pod(ds: dict[str, Any], node: str) -> dict[str, Any]:
    spec = copy.deepcopy(ds["spec"]["template"]["spec"])
    spec["tolerations"] = [*spec.get("tolerations", []), *DS_TOLERATIONS]
    terms = (spec.get("affinity") or {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms") or [{}]  # fmt: skip
    pin = {"key": "metadata.name", "operator": "In", "values": [node]}
    for t in terms:  # the controller's ReplaceDaemonSetPodNodeNameNodeAffinity keeps the label terms
        t["matchFields"] = [pin]
    spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"probe-{ds['metadata']['name']}"[:63],
            "namespace": ds["metadata"]["namespace"],
        },
        "spec": spec,
    }


def _bound(kube: Any, ds: dict[str, Any], node: str) -> str | None:
    """The phase of the DaemonSet's pod on `node`, if one is bound there."""
    sel = ",".join(f"{k}={v}" for k, v in ds["spec"]["selector"]["matchLabels"].items())
    pods = kube.core.list_namespaced_pod(ds["metadata"]["namespace"], label_selector=sel).items
    for p in pods:
        owners = [o.name for o in p.metadata.owner_references or []]
        if ds["metadata"]["name"] in owners and p.spec.node_name == node:
            return p.status.phase or "Pending"
    return None


def _reason(kube: Any, ds: dict[str, Any], node: str, timeout: float = 30) -> str:
    pod = probe_pod(ds, node)
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    kube.apply([pod])
    deadline = time.monotonic() + timeout
    msg = f"the scheduler said nothing of probe pod {ns}/{name} within {timeout:.0f}s"
    while time.monotonic() < deadline:
        p = kube.core.read_namespaced_pod(name, ns)
        if p.spec.node_name:
            msg = f"the scheduler would bind it (probe bound to {p.spec.node_name}), yet the controller made no pod"
            break
        cond = [x for x in p.status.conditions or [] if x.type == "PodScheduled" and x.status == "False"]
        if cond:
            msg = f"FailedScheduling: {cond[0].message}"
            break
        time.sleep(1)
    kube.core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    return msg


def place(
    kube: Any,
    docs: list[dict],
    node_at: dict[str, dict],
    expected: dict[str, str | None] = EXPECTED,
    settle: float = 60,
) -> Placement:
    """Apply `docs`, then put the node through its stages (stage -> Node object, in order): at each, wait
    until every DaemonSet `expected` there has a pod on the node (or `settle` seconds pass), then ask the
    scheduler why of each that has none."""
    namespaces = sorted({d["metadata"]["namespace"] for d in docs if d["kind"] not in _CLUSTER_KINDS})
    kube.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces])
    kube.apply([d for d in docs if d["kind"] not in _SKIP])
    daemonsets = [d for d in docs if _is_daemonset(d)]
    stages = list(node_at)
    out = Placement()
    for i, (stage, node) in enumerate(node_at.items()):
        name = node["metadata"]["name"]
        kube.apply([{k: v for k, v in node.items() if k != "status"}])
        kube.core.patch_node_status(name, {"status": node["status"]})
        want = {ds for ds, first in expected.items() if first in stages and stages.index(first) <= i}
        deadline = time.monotonic() + settle
        while True:
            landed = {ds["metadata"]["name"]: ph for ds in daemonsets if (ph := _bound(kube, ds, name))}
            if want <= set(landed) or time.monotonic() > deadline:
                break
            time.sleep(2)
        time.sleep(3)  # one more look, for a DaemonSet that lands where it must not
        landed = {ds["metadata"]["name"]: ph for ds in daemonsets if (ph := _bound(kube, ds, name))}
        out.landed[stage] = landed
        out.refused[stage] = {
            ds["metadata"]["name"]: _reason(kube, ds, name)
            for ds in daemonsets
            if ds["metadata"]["name"] not in landed
        }
    return out
