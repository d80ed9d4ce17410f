"""The GPU workloads act 7 builds on AWS: a public image and a short script passed as arguments, so a
nightly pulls them as they are. Each makes real silicon show the DCGM pattern that the local simulator's
profile of the same name reports (local.sim.profiles), against the diagnosis thresholds
(gpu_finops.diagnose.activity: SM_LOW 0.10, FB_RESIDENT 0.80, FB_IN_USE 0.05, PCIE_LOW_BPS 100 MB/s).

- data-starved trainer (DATA_STARVED): holds a working set of 30 % of the card's VRAM, then per step
  waits half a second for its "data loader", copies a 1 MiB batch to the card and runs a few 256x256
  matmuls. The kernels run for well under 1 % of the time and use a few SMs, so GPU_UTIL (time with any
  kernel) is a few percent and SM_ACTIVE (SMs busy, averaged) lower still, below SM_LOW; PCIe carries
  ~2 MiB/s, far below PCIE_LOW_BPS; VRAM is ~31 %: in use (>= FB_IN_USE), not resident (< FB_RESIDENT).
  The diagnosis classes it data-starved.
- resident model (RESIDENT_MODEL): holds 28 % of the card's VRAM (the model) and answers one tiny
  "request" every five seconds. SM_ACTIVE ~0, GPU_UTIL ~0-1 %. Three such servers time-slice one card, so
  the card's FB_USED is ~85-90 % (each also holds a CUDA context, ~0.5 GiB): >= FB_RESIDENT. The diagnosis
  classes them resident, and the card's VRAM as full.
- a replica that cannot start for VRAM (`vram_wait_init`): an init container that waits until the card has
  the room a model needs (28 % free) before the pod's container may start. On the card the three servers
  hold (~12 % free) it waits for ever, so the pod is bound and Pending, as the memory rule needs; on kwok
  the same state comes from the pod-ready stage's delay.

Each script prints the card's UUID first (`visible devices: GPU-...`), which the act reads from the log.
The image is pinned by tag (Docker Hub, public; CUDA 12.4 runs on the EKS NVIDIA AMI's 550+ driver);
about 3 GiB, within the GPU nodes' 100 GiB volume. The tag, not the digest: no registry is reachable from
where this was written to read the digest; Renovate's docker manager can pin it.
"""

from __future__ import annotations

from typing import Any

from local.sim.profiles import DATA_STARVED, RESIDENT_MODEL

WORKLOAD_IMAGE = "docker.io/pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"

RESIDENT_FRACTION = 0.28  # of the card's VRAM, per server; three servers: ~0.84 + contexts >= FB_RESIDENT
STARVED_FRACTION = 0.30  # of the card's VRAM: >= FB_IN_USE, < FB_RESIDENT even with the context
VRAM_NEEDED_FRACTION = RESIDENT_FRACTION  # what the waiting replica needs free before it starts

_PRELUDE = """
import os, sys, time
import torch
print("visible devices:", os.environ.get("NVIDIA_VISIBLE_DEVICES"), flush=True)
seconds = float(sys.argv[1])
deadline = time.monotonic() + seconds
free, total = torch.cuda.mem_get_info()
"""

_DATA_STARVED = (
    _PRELUDE
    + f"""
working_set = torch.ones(int(total * {STARVED_FRACTION}), dtype=torch.uint8, device="cuda")
weights = torch.randn(256, 256, device="cuda")
batch = torch.zeros(1 << 20, dtype=torch.uint8)
print("data-starved trainer: working set", working_set.numel() >> 20, "MiB", flush=True)
while time.monotonic() < deadline:
    time.sleep(0.5)  # the data loader: the step waits on input
    x = batch.to("cuda")  # 1 MiB over PCIe per step
    for _ in range(4):
        weights = torch.tanh(weights @ weights)
    torch.cuda.synchronize()
"""
)

_RESIDENT_MODEL = (
    _PRELUDE
    + f"""
model = torch.ones(int(total * {RESIDENT_FRACTION}), dtype=torch.uint8, device="cuda")
query = torch.randn(64, 64, device="cuda")
print("resident model:", model.numel() >> 20, "MiB held", flush=True)
while time.monotonic() < deadline:
    time.sleep(5)  # little traffic: one small request every five seconds
    (query @ query).sum().item()
"""
)

_VRAM_WAIT = f"""
import time
import torch
while True:
    free, total = torch.cuda.mem_get_info()
    if free >= {VRAM_NEEDED_FRACTION} * total:
        break
    print("waiting for VRAM:", free >> 20, "MiB free of", total >> 20, flush=True)
    time.sleep(5)
"""

SCRIPTS = {DATA_STARVED: _DATA_STARVED, RESIDENT_MODEL: _RESIDENT_MODEL}


def workload_container(profile: str, resource: str, seconds: float | None) -> dict[str, Any]:
    """The container that makes `profile`'s pattern on a real GPU for `seconds` (None: until deleted).
    Raises ValueError naming the profiles there are for one without a workload."""
    if profile not in SCRIPTS:
        raise ValueError(f"no AWS workload for GPU profile {profile!r}; there are: {', '.join(SCRIPTS)}")
    return {
        "name": "gpu",
        "image": WORKLOAD_IMAGE,
        "command": ["python", "-c", SCRIPTS[profile], "inf" if seconds is None else str(seconds)],
        "resources": {"limits": {resource: "1"}, "requests": {resource: "1"}},
    }


def vram_wait_init(resource: str) -> dict[str, Any]:
    """An init container that holds the pod's start until its card has the VRAM a model needs."""
    return {
        "name": "wait-for-vram",
        "image": WORKLOAD_IMAGE,
        "command": ["python", "-c", _VRAM_WAIT],
        "resources": {"limits": {resource: "1"}, "requests": {resource: "1"}},
    }
