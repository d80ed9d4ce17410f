"""Per-pod workload profiles for the GPU simulator: what DCGM would report for a GPU held by each kind.

The simulator reads `PROFILE_ANNOTATION` on a pod that holds a GPU and exports `profile_values(...)` for
that GPU (only the fields its metrics CSV exports). The values are chosen against the diagnosis
thresholds in `gpu_finops.diagnose.activity`, so each profile classifies as its name says.
"""

from __future__ import annotations

from gpu_finops.facts import dcgm
from gpu_finops.facts.kube_keys import ANNOTATION_GPU_PROFILE

PROFILE_ANNOTATION = ANNOTATION_GPU_PROFILE

RESIDENT_MODEL = "resident-model"  # a serving pod with a large model warm in VRAM and little traffic
DATA_STARVED = "data-starved"  # a trainer waiting on a slow data source
BUSY_TRAINER = "busy-trainer"  # a trainer keeping its GPU busy
SMALL_BATCH = "small-batch-server"  # a server copying small batches: PCIe busy, kernels tiny
UNHELD = "unheld"  # no pod holds the GPU
# The ledger's behaviours (docs/ledger.md): power and SM clock against its idle floors (40 W, 600 MHz)
# decide "live by physics"; GPU_UTIL above 10 % "busy by the metric".
TRAINING_STEPPING = "training-stepping"  # a trainer taking steps: busy and live
TRAINING_STALLED = "training-stalled"  # a rank spinning in a dead collective: busy by metric, idle by physics
SERVING_IDLE = "serving-idle"  # a model warm in memory with no traffic: neither busy nor live
SERVING_BUSY = "serving-busy"  # a server answering traffic: busy and live
LEDGER_BEHAVIOURS = (TRAINING_STEPPING, TRAINING_STALLED, SERVING_IDLE, SERVING_BUSY)

FB_TOTAL_MIB = 46068.0  # an L40S, as the simulator's cards are

_PROFILES: dict[str, dict[str, float]] = {
    RESIDENT_MODEL: {
        dcgm.GPU_UTIL: 100.0,
        dcgm.SM_ACTIVE: 0.05,
        dcgm.SM_OCCUPANCY: 0.03,
        dcgm.FB_USED: 41461.0,  # 90 %
        dcgm.PCIE_TX_BYTES: 5e6,
        dcgm.PCIE_RX_BYTES: 20e6,
        dcgm.NVLINK_TX_BYTES: 0.0,
        dcgm.NVLINK_RX_BYTES: 0.0,
        dcgm.POWER_USAGE: 95.0,
        dcgm.SM_CLOCK: 1980.0,
    },
    DATA_STARVED: {
        dcgm.GPU_UTIL: 20.0,
        dcgm.SM_ACTIVE: 0.02,
        dcgm.SM_OCCUPANCY: 0.01,
        dcgm.FB_USED: 13820.0,  # 30 %
        dcgm.PCIE_TX_BYTES: 2e6,
        dcgm.PCIE_RX_BYTES: 8e6,
        dcgm.NVLINK_TX_BYTES: 0.0,
        dcgm.NVLINK_RX_BYTES: 0.0,
        dcgm.POWER_USAGE: 78.0,
        dcgm.SM_CLOCK: 1980.0,
    },
    BUSY_TRAINER: {
        dcgm.GPU_UTIL: 100.0,
        dcgm.SM_ACTIVE: 0.85,
        dcgm.SM_OCCUPANCY: 0.55,
        dcgm.FB_USED: 29944.0,  # 65 %
        dcgm.PCIE_TX_BYTES: 0.4e9,
        dcgm.PCIE_RX_BYTES: 2.6e9,
        dcgm.NVLINK_TX_BYTES: 0.0,
        dcgm.NVLINK_RX_BYTES: 0.0,
        dcgm.POWER_USAGE: 310.0,
        dcgm.SM_CLOCK: 1980.0,
    },
    SMALL_BATCH: {
        dcgm.GPU_UTIL: 100.0,
        dcgm.SM_ACTIVE: 0.30,
        dcgm.SM_OCCUPANCY: 0.08,
        dcgm.FB_USED: 16124.0,  # 35 %
        dcgm.PCIE_TX_BYTES: 1.5e9,
        dcgm.PCIE_RX_BYTES: 1.5e9,
        dcgm.NVLINK_TX_BYTES: 0.0,
        dcgm.NVLINK_RX_BYTES: 0.0,
        dcgm.POWER_USAGE: 165.0,
        dcgm.SM_CLOCK: 1980.0,
    },
    TRAINING_STEPPING: {
        dcgm.GPU_UTIL: 100.0,
        dcgm.SM_ACTIVE: 0.80,
        dcgm.SM_OCCUPANCY: 0.50,
        dcgm.FB_USED: 36854.0,  # 80 %
        dcgm.PCIE_TX_BYTES: 0.3e9,
        dcgm.PCIE_RX_BYTES: 1.2e9,
        dcgm.NVLINK_TX_BYTES: 0.0,
        dcgm.NVLINK_RX_BYTES: 0.0,
        dcgm.POWER_USAGE: 330.0,
        dcgm.SM_CLOCK: 2100.0,
    },
    TRAINING_STALLED: {  # the source's stalled rank: util pinned, clock down (121 W at 345 MHz on an H100)
        dcgm.GPU_UTIL: 100.0,
        dcgm.SM_ACTIVE: 0.01,
        dcgm.SM_OCCUPANCY: 0.01,
        dcgm.FB_USED: 36854.0,
        dcgm.PCIE_TX_BYTES: 0.0,
        dcgm.PCIE_RX_BYTES: 0.0,
        dcgm.NVLINK_TX_BYTES: 0.0,
        dcgm.NVLINK_RX_BYTES: 0.0,
        dcgm.POWER_USAGE: 36.0,
        dcgm.SM_CLOCK: 345.0,
    },
    SERVING_IDLE: {
        dcgm.GPU_UTIL: 0.0,
        dcgm.SM_ACTIVE: 0.0,
        dcgm.SM_OCCUPANCY: 0.0,
        dcgm.FB_USED: 41461.0,  # 90 %: the model stays resident
        dcgm.PCIE_TX_BYTES: 0.0,
        dcgm.PCIE_RX_BYTES: 0.0,
        dcgm.NVLINK_TX_BYTES: 0.0,
        dcgm.NVLINK_RX_BYTES: 0.0,
        dcgm.POWER_USAGE: 34.0,
        dcgm.SM_CLOCK: 210.0,
    },
    SERVING_BUSY: {
        dcgm.GPU_UTIL: 100.0,
        dcgm.SM_ACTIVE: 0.55,
        dcgm.SM_OCCUPANCY: 0.35,
        dcgm.FB_USED: 41461.0,
        dcgm.PCIE_TX_BYTES: 0.2e9,
        dcgm.PCIE_RX_BYTES: 0.2e9,
        dcgm.NVLINK_TX_BYTES: 0.0,
        dcgm.NVLINK_RX_BYTES: 0.0,
        dcgm.POWER_USAGE: 250.0,
        dcgm.SM_CLOCK: 1980.0,
    },
    UNHELD: {
        dcgm.GPU_UTIL: 0.0,
        dcgm.SM_ACTIVE: 0.0,
        dcgm.SM_OCCUPANCY: 0.0,
        dcgm.FB_USED: 0.0,
        dcgm.PCIE_TX_BYTES: 0.0,
        dcgm.PCIE_RX_BYTES: 0.0,
        dcgm.NVLINK_TX_BYTES: 0.0,
        dcgm.NVLINK_RX_BYTES: 0.0,
        dcgm.POWER_USAGE: 70.0,
        dcgm.SM_CLOCK: 210.0,
    },
}
PROFILES = tuple(_PROFILES)


def profile_values(profile: str) -> dict[str, float]:
    """DCGM field -> value for a GPU held by a pod of this profile (FB_FREE = card total - FB_USED).

    Raises ValueError naming the known profiles for an unknown one, so a typo in an annotation is loud.
    """
    if profile not in _PROFILES:
        raise ValueError(f"unknown GPU profile {profile!r}; known: {', '.join(PROFILES)}")
    values = dict(_PROFILES[profile])
    values[dcgm.FB_FREE] = FB_TOTAL_MIB - values[dcgm.FB_USED]
    return values
