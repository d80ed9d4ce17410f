"""The DCGM metric names the collector reads and the infra's metrics CSV must export.

This module holds constants only, so `infra/` may import it without pulling in the collector.
"""

from __future__ import annotations

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"  # percent 0..100: time at least one kernel was resident
SM_ACTIVE = "DCGM_FI_PROF_SM_ACTIVE"  # ratio 0..1: time a warp was active, averaged over all SMs
SM_OCCUPANCY = "DCGM_FI_PROF_SM_OCCUPANCY"  # ratio 0..1: resident warps / max warps
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
PIPE_TENSOR_ACTIVE = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
DRAM_ACTIVE = "DCGM_FI_PROF_DRAM_ACTIVE"
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"  # watts
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"  # MHz
FB_USED = "DCGM_FI_DEV_FB_USED"  # MiB
FB_FREE = "DCGM_FI_DEV_FB_FREE"  # MiB
PCIE_TX_BYTES = "DCGM_FI_PROF_PCIE_TX_BYTES"  # bytes/s over PCIe, headers and payload (field 1009)
PCIE_RX_BYTES = "DCGM_FI_PROF_PCIE_RX_BYTES"  # (field 1010)
NVLINK_TX_BYTES = "DCGM_FI_PROF_NVLINK_TX_BYTES"  # bytes/s over NVLink, every link (field 1011)
NVLINK_RX_BYTES = "DCGM_FI_PROF_NVLINK_RX_BYTES"  # (field 1012)

# What the collector queries every cycle, one range-aware query each, for all GPUs at once.
COLLECTED = (GPU_UTIL, SM_ACTIVE, SM_OCCUPANCY, POWER_USAGE, SM_CLOCK)

# What the pending-pod diagnosis reads per GPU and per holder, one query each over the window.
DIAGNOSED = (
    SM_ACTIVE,
    SM_OCCUPANCY,
    FB_USED,
    FB_FREE,
    PCIE_TX_BYTES,
    PCIE_RX_BYTES,
    NVLINK_TX_BYTES,
    NVLINK_RX_BYTES,
    POWER_USAGE,
)

# The fields dcgm-exporter 4.8.3 reports per process on a held card when KUBERNETES_VIRTUAL_GPUS is on
# (`isPerProcessMetric`, internal/pkg/transformation/process_metrics.go): the card's own series, without
# pod labels, and one per pod with its processes' share. docs/infra.md, "Time-sliced attribution".
PER_PROCESS = (GPU_UTIL, FB_USED)
# Under MIG dcgm-exporter reports each GPU instance, not the card: the card's `gpu` and `UUID` and these two
# (internal/pkg/rendermetrics/render_metrics.go); no DCGM_FI_DEV_GPU_UTIL per instance
MIG_PROFILE_LABEL = "GPU_I_PROFILE"  # the instance's profile, e.g. 1g.10gb
MIG_INSTANCE_LABEL = "GPU_I_ID"  # its GPU instance id on the card

# The exporter's label that names the node a GPU sits on. dcgm-exporter 4.8.3 renamed it from `Hostname`
# to `hostname` (NVIDIA/dcgm-exporter#655); readers accept both, the new spelling first.
HOSTNAME_LABEL = "hostname"  # the pinned exporter's spelling (4.8.3) and the local simulator's default
OLD_HOSTNAME_LABEL = "Hostname"  # the spelling before 4.8.3
HOSTNAME_LABELS = (HOSTNAME_LABEL, OLD_HOSTNAME_LABEL)


def hostname_of(labels: dict[str, str]) -> str | None:
    """The node a series' GPU sits on, under either spelling of the exporter's label; None when neither."""
    for label in HOSTNAME_LABELS:
        if labels.get(label):
            return labels[label]
    return None


def describe_series(metric: str, labels: dict[str, str]) -> str:
    """A series as PromQL would print it, for messages that must name it."""
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{metric}{{{inner}}}"
