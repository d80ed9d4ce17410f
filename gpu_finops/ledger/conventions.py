"""What the ledger reads from the cluster: label keys, their values, thresholds, and the bucket names.

One frozen object so the recording rules, the report and the docs agree. Change a convention here,
then re-render `rules.yaml` with `python -m gpu_finops.ledger.rules --write`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpu_finops.facts import dcgm_inputs
from gpu_finops.facts.collector_metrics import DRA_GPUS, POD_DRA_GPUS
from gpu_finops.facts.dcgm import HOSTNAME_LABEL, OLD_HOSTNAME_LABEL
from gpu_finops.facts.dcgm_inputs import PINNED, Spelling
from gpu_finops.facts.kube_keys import (
    LABEL_GPU_COUNT,
    LABEL_GPU_REPLICAS,
    LABEL_INSTANCE_GPU_COUNT,
    LABEL_MIG_STRATEGY,
    LABEL_UNSCHEDULABLE_REASON,
    LABEL_WORKLOAD_CLASS,
    ksm_sanitized,
)

GPU_RESOURCE = "nvidia_com_gpu"  # kube-state-metrics' sanitized `nvidia.com/gpu`
# time-sliced replicas, as the device plugin renames them (renameByDefault): `nvidia.com/gpu.shared`
SHARED_GPU_RESOURCE = "nvidia_com_gpu_shared"
GPU_RESOURCES = (GPU_RESOURCE, SHARED_GPU_RESOURCE)
# MIG slices under the mixed strategy, one resource per profile (`nvidia.com/mig-1g.10gb`, `.shared` when
# time-sliced and renamed)
MIG_RESOURCES = "nvidia_com_mig_.+"
# every GPU resource the held-GPU model reads: whole cards, replicas and MIG slices
GPU_RESOURCE_SELECTOR = f'resource=~"{"|".join((*GPU_RESOURCES, MIG_RESOURCES))}"'
WHOLE_OR_REPLICA_SELECTOR = f'resource=~"{"|".join(GPU_RESOURCES)}"'

# Node labels that say a node was made for GPUs whatever its device plugin advertises (Karpenter's on AWS,
# GPU feature discovery's anywhere): the alert on a GPU node whose nvidia.com/gpu never registered reads them
GPU_NODE_LABELS = (LABEL_INSTANCE_GPU_COUNT, LABEL_GPU_COUNT)

# Rungs of the allocation ladder, top to bottom (recording-rule metric names in `rules.py`).
RUNGS: tuple[str, ...] = (
    "installed",
    "schedulable",
    "allocated",
    "busy_by_metric",
    "live_by_physics",
    "useful_training",
)

# Buckets that partition installed GPUs at every evaluation, in report order.
BUCKETS: tuple[str, ...] = (
    "unschedulable_repair_queue",
    "unschedulable_driver_rollout",
    "unschedulable_other",
    "free_placeable",
    "free_stranded",
    "allocated_serving_traffic",
    "allocated_serving_headroom",
    "allocated_training_stepping",
    "allocated_training_restart",
    "allocated_unclassified",
    "busy_by_metric_idle_by_physics",
)

# Workload classes a pod may carry in `Conventions.class_label`, and the bucket each one lands in.
CLASS_BUCKETS: dict[str, str] = {
    "serving-traffic": "allocated_serving_traffic",
    "serving-headroom": "allocated_serving_headroom",
    "training-stepping": "allocated_training_stepping",
    "training-restart": "allocated_training_restart",
    "unclassified": "allocated_unclassified",
}

# Classes that claim to be doing work: a GPU of theirs that is busy by the metric but idle by physics
# moves to `busy_by_metric_idle_by_physics`. Headroom and restart are idle by declaration already.
WORKING_CLASSES: tuple[str, ...] = ("serving-traffic", "training-stepping", "unclassified")

# The series the rules read, and the selector that counts each one's presence.
# Dynamic Resource Allocation: a node whose GPUs are its DRA driver's devices advertises no GPU resource, and
# kube-state-metrics has no series of ResourceSlices or of claims' allocations; the collector exports them
# (facts/collector_metrics.py), and the rules count them under the driver's name as their resource
DRA_RESOURCE = (
    "gpu_nvidia_com"  # the driver gpu.nvidia.com, spelled as kube-state-metrics spells it a resource
)


def _agreed(state: str) -> str:
    """A DRA node's cards in `state` where every collector exporting them agrees (as a device's share is read)."""
    series = f'{DRA_GPUS}{{state="{state}"}}'
    return f"(max by (node) ({series}) == on (node) min by (node) ({series}))"


# a node counted by its DRA cards: one advertising no GPU resource (a zero capacity series is none)
DRA_INSTALLED = (
    f"({_agreed('installed')} unless on (node) (kube_node_status_capacity{{{GPU_RESOURCE_SELECTOR}}} > 0))"
)
DRA_SCHEDULABLE = _agreed("schedulable")
# what a pod holds by claims, on a node counted by its DRA cards; one pod once, whichever node a lagging
# collector still names (its node is kube_pod_info's)
DRA_HELD = f"max by (namespace, pod) ({POD_DRA_GPUS} and on (node) {DRA_INSTALLED})"
DRA_DISAGREED = f"group by (node) (max by (node, state) ({DRA_GPUS}) != on (node, state) min by (node, state) ({DRA_GPUS}))"
KSM_INPUTS: dict[str, str] = {
    # each GPU input is present on a fleet whose GPUs are all DRA devices when the collector exports those
    "kube_node_status_capacity": f'kube_node_status_capacity{{{GPU_RESOURCE_SELECTOR}}} or {DRA_GPUS}{{state="installed"}}',
    "kube_node_status_allocatable": f'kube_node_status_allocatable{{{GPU_RESOURCE_SELECTOR}}} or {DRA_GPUS}{{state="schedulable"}}',
    "kube_node_spec_unschedulable": "kube_node_spec_unschedulable",
    "kube_node_status_condition": 'kube_node_status_condition{condition="Ready"}',
    "kube_node_labels": "kube_node_labels",
    "kube_pod_container_resource_limits": f"kube_pod_container_resource_limits{{{GPU_RESOURCE_SELECTOR}}} or {POD_DRA_GPUS}",
    "kube_pod_status_phase": "kube_pod_status_phase",
    "kube_pod_labels": "kube_pod_labels",
    "kube_pod_info": "kube_pod_info",
}
DCGM_INPUTS: dict[str, str] = {
    "DCGM_FI_DEV_GPU_UTIL": "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_POWER_USAGE": "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_SM_CLOCK": "DCGM_FI_DEV_SM_CLOCK",
}
# The collector's reading of a node: what one device of each GPU resource is worth in cards (DEVICE_SHARE), and
# the nodes the held-GPU model refused (NODE_UNREADABLE), whose devices no share may be guessed for
SHARE = "node_resource:ledger_gpu_share:ratio"  # cards per device, per node and GPU resource (rules.py)
# GPU nodes advertising devices of a resource no share is known for (a MIG node without the collector's
# share, a node the collector refused, a resource a layout added since its last export, two collectors that
# disagree): the rules leave those devices out of every count, so they are counted here, the report names
# them and GpuFinopsGpuDevicesUncounted fires
UNSHARED_NODES = f"group by (node) ((kube_node_status_capacity{{{GPU_RESOURCE_SELECTOR}}} > 0) unless on (node, resource) {SHARE})"
UNSHARED: dict[str, str] = {"GPU nodes with devices of no known share of a card": UNSHARED_NODES}
# Running pods holding GPUs on a node with no installed GPUs at the same evaluation (its capacity series not yet
# in kube-state-metrics, or already gone from it, while the pod's still name the node): the rules count a pod
# allocated only on an installed node, so the buckets never exceed installed; the pods are counted here
INSTALLED_NODES = "node:ledger_gpus_installed:sum"
PODS_OFF_INSTALLED = (
    f'group by (namespace, pod) (kube_pod_container_resource_limits{{{GPU_RESOURCE_SELECTOR},node!=""}} '
    'and on (namespace, pod) (max by (namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1) '
    f"unless on (node) {INSTALLED_NODES})"
)
# Running pods asking for GPUs on a DRA node that the collector reports holding none through claims (it is not
# running, its holdings are not read, or it has not read the pod yet): their GPUs are not counted allocated
PODS_UNCLAIMED = (
    f'group by (namespace, pod) (kube_pod_container_resource_limits{{{GPU_RESOURCE_SELECTOR},node!=""}} '
    'and on (namespace, pod) (max by (namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1) '
    f"and on (node) {DRA_INSTALLED} unless on (namespace, pod) {POD_DRA_GPUS})"
)
OFF_INSTALLED: dict[str, str] = {"Running GPU pods on nodes with no installed GPUs": PODS_OFF_INSTALLED}
UNCLAIMED: dict[str, str] = {"Running GPU pods on DRA nodes with no claim reported": PODS_UNCLAIMED}
DRA_UNAGREED: dict[str, str] = {"DRA nodes whose collectors disagree on their cards": DRA_DISAGREED}

# DCGM series that name no node: neither `hostname` (dcgm-exporter 4.8.3 on) nor `Hostname` (before).
# The rules leave them out of every device count, so they are counted here and the report names them.
DCGM_UNPLACED: dict[str, str] = {
    f"{name} without {HOSTNAME_LABEL} or {OLD_HOSTNAME_LABEL}": (
        f'{name}{{{HOSTNAME_LABEL}="",{OLD_HOSTNAME_LABEL}=""}}'
    )
    for name in DCGM_INPUTS
}


def spelled_dcgm_inputs(spelling: Spelling) -> dict[str, str]:
    """DCGM_INPUTS under a fleet's spelling: the same keys (the pinned names the report knows), each
    counting the series the fleet's exporter actually serves."""
    names = {
        "DCGM_FI_DEV_GPU_UTIL": spelling.gpu_util,
        "DCGM_FI_DEV_POWER_USAGE": spelling.power,
        "DCGM_FI_DEV_SM_CLOCK": spelling.sm_clock,
    }
    return {key: names[key] for key in DCGM_INPUTS}


def spelled_dcgm_unplaced(spelling: Spelling) -> dict[str, str]:
    """DCGM_UNPLACED under a fleet's spelling: series that carry none of its node labels."""
    empty = ",".join(f'{label}=""' for label in spelling.hostname_labels)
    spelled = spelled_dcgm_inputs(spelling)
    return {key: f"{spelled[name]}{{{empty}}}" for key, name in zip(DCGM_UNPLACED, DCGM_INPUTS, strict=True)}


def ksm_label(key: str) -> str:
    """The Prometheus label kube-state-metrics makes of a Kubernetes label key (`label_` + sanitized)."""
    return "label_" + ksm_sanitized(key)


@dataclass(frozen=True)
class Conventions:
    """Label keys and thresholds. Defaults are the documented convention (docs/ledger.md)."""

    # Node label naming why a node is unschedulable; kube-state-metrics must allowlist it:
    # --metric-labels-allowlist=nodes=[gpu-finops.io/unschedulable-reason]
    reason_label: str = LABEL_UNSCHEDULABLE_REASON
    # label value -> bucket; any other value, or none, is `unschedulable_other`
    reasons: dict[str, str] = field(
        default_factory=lambda: {
            "repair-queue": "unschedulable_repair_queue",
            "driver-rollout": "unschedulable_driver_rollout",
        }
    )
    # Pod label naming the workload class (values: CLASS_BUCKETS keys);
    # --metric-labels-allowlist=pods=[gpu-finops.io/workload-class]
    class_label: str = LABEL_WORKLOAD_CLASS
    # GPU feature discovery's label: devices advertised per physical card (time-slicing replicas). Node
    # capacity and pod limits are divided by it, so every ladder count is in cards, as DCGM's are;
    # --metric-labels-allowlist=nodes=[...,nvidia.com/gpu.replicas]. PromQL cannot read a number out of a
    # label value, so the values it recognises are listed; any other value (or none) counts 1 per card.
    replicas_label: str = LABEL_GPU_REPLICAS
    replica_values: tuple[int, ...] = tuple(range(2, 17))
    # busy by the metric: DCGM_FI_DEV_GPU_UTIL strictly above this percentage
    busy_util_percent: float = 10.0
    # live by physics: power strictly above this many watts AND SM clock strictly above this many MHz.
    # The source's stalled GPU drew 121 W at 345 MHz against 700 W at 1980 MHz when stepping.
    live_power_watts: float = 40.0
    live_sm_clock_mhz: float = 600.0
    # a free GPU is stranded when no GPU request shape seen in this window fits on its node
    shape_window: str = "1d"
    # rule evaluation interval: each recorded sample stands for this long
    interval: str = "1m"
    # how the fleet's exporter spells the DCGM inputs (gpu_finops/facts/dcgm_inputs.py): names, node label, units.
    # GPU_UTIL's unit must be declared for the rules (PromQL cannot ask the collector what it detected):
    # `auto` renders as percent, and the collector errors on data that is not
    spelling: Spelling = PINNED

    @property
    def busy_threshold(self) -> float:
        """The busy threshold in the unit the fleet's GPU_UTIL series carry."""
        ratio = self.spelling.gpu_util_unit == dcgm_inputs.RATIO
        return self.busy_util_percent / 100 if ratio else self.busy_util_percent

    @property
    def live_clock_threshold(self) -> float:
        """The live SM clock threshold in the unit the fleet's clock series carry."""
        return self.live_sm_clock_mhz * self.spelling.sm_clock_per_mhz

    @property
    def reason_ksm_label(self) -> str:
        return ksm_label(self.reason_label)

    @property
    def class_ksm_label(self) -> str:
        return ksm_label(self.class_label)

    @property
    def replicas_ksm_label(self) -> str:
        return ksm_label(self.replicas_label)

    @property
    def node_labels(self) -> tuple[str, ...]:
        """Node label keys kube-state-metrics must allowlist for the rules and the alerts."""
        return (self.reason_label, self.replicas_label, LABEL_MIG_STRATEGY, *GPU_NODE_LABELS)

    @property
    def ksm_labels_allowlist(self) -> tuple[str, ...]:
        """kube-state-metrics' `--metric-labels-allowlist` entries the rules need (comma-joined on its
        command line; a list in the kube-state-metrics chart's `metricLabelsAllowlist`)."""
        return (f"nodes=[{','.join(self.node_labels)}]", f"pods=[{self.class_label}]")


def interval_seconds(duration: str) -> int:
    """Seconds in a Prometheus duration such as `1m`, `1h30m`, `15s` (whole seconds only)."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    parts = re.fullmatch(r"(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?", duration)
    if not duration or not parts:
        raise ValueError(f"not a whole-second Prometheus duration: {duration!r}")
    values = parts.group(2, 4, 6, 8)
    if any(v and len(v) > 9 for v in values):  # more digits than any window could need: no overflow later
        raise ValueError(f"{duration[:40]!r} is longer than any window: at most {MAX_DURATION_S // 86400}d")
    seconds = sum(int(v) * units[u] for v, u in zip(values, "dhms", strict=True) if v)
    if seconds > MAX_DURATION_S:
        raise ValueError(f"{duration[:40]!r} is longer than any window: at most {MAX_DURATION_S // 86400}d")
    return seconds


MAX_DURATION_S = 10 * 366 * 86400  # ten years: a window or step past that is a typo
