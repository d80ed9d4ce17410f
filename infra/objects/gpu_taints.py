"""The taints our GPU pools put on their nodes, and what a DaemonSet that serves every GPU node tolerates: one home
for both, so that the pools (karpenter.py) and the DaemonSets' values (device_plugin.py, monitoring.py) cannot
disagree."""

from __future__ import annotations

from gpu_finops.facts.kube_keys import GPU_RESOURCE as GPU
from gpu_finops.facts.kube_keys import TAINT_DRA_POOL, TAINT_MPS_POOL

GPU_TAINT = {"key": GPU, "value": "true", "effect": "NoSchedule"}  # every GPU pool's nodes
MPS_TAINT = {"key": TAINT_MPS_POOL, "value": "true", "effect": "NoSchedule"}  # the MPS pool's
DRA_TAINT = {"key": TAINT_DRA_POOL, "value": "true", "effect": "NoSchedule"}  # the DRA pool's
# What a DaemonSet that serves every GPU node tolerates (the device plugin's, GFD's, NFD's worker, dcgm-exporter,
# the DRA driver's kubelet plugin): each taint any of our GPU pools puts on its nodes, whatever its value
GPU_POOL_TOLERATIONS: tuple[dict[str, str], ...] = tuple(
    {"key": t["key"], "operator": "Exists", "effect": t["effect"]} for t in (GPU_TAINT, MPS_TAINT, DRA_TAINT)
)
