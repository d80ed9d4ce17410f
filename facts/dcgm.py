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

# What the collector queries every cycle, one range-aware query each, for all GPUs at once.
COLLECTED = (GPU_UTIL, SM_ACTIVE, SM_OCCUPANCY, POWER_USAGE, SM_CLOCK)

# The exporter's label that names the node a GPU sits on.
HOSTNAME_LABEL = "Hostname"
