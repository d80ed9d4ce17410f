"""The honest measure per workload class: MFU and goodput for training, tokens per provisioned GPU-hour
and the warm-idle share for serving. Pure functions; the same arithmetic as the recording rules.

Never compare these across models: they move with model shape, sequence length and batch size. Each run
is read against its own baseline (the rules record a 7-day median next to each figure).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class DensePeak:
    """Peak bf16 tensor-core throughput per GPU *without* 2:4 structured sparsity."""

    key: str  # the value a workload puts in its `gpu_model` label
    flops: float  # FLOP/s, dense bf16
    sparse_flops: float  # the datasheet's "with sparsity" figure: never a denominator, kept to refuse it
    match: str  # regex over DCGM's `modelName` label / nvidia-smi's name
    source: str


# Dense bf16 peaks from NVIDIA's datasheets (the headline figures there are with sparsity, twice these).
DENSE_PEAKS: tuple[DensePeak, ...] = (
    DensePeak("h100-sxm", 989e12, 1979e12, r"H100.*(SXM|HBM3)", "NVIDIA H100 Tensor Core GPU datasheet, SXM"),
    DensePeak("h200", 989e12, 1979e12, r"H200", "NVIDIA H200 Tensor Core GPU datasheet, SXM"),
    DensePeak("a100", 312e12, 624e12, r"A100", "NVIDIA A100 Tensor Core GPU datasheet"),
    DensePeak("l40s", 362.05e12, 733e12, r"L40S", "NVIDIA L40S datasheet"),
    # AWS's A10G has no public NVIDIA datasheet; this is the A10's figure. Override when you have AWS's.
    DensePeak("a10g", 125e12, 250e12, r"A10G?\b", "NVIDIA A10 datasheet (A10G: AWS variant, no datasheet)"),
    DensePeak("l4", 121e12, 242e12, r"\bL4\b", "NVIDIA L4 datasheet"),
)


def dense_peak(model: str) -> DensePeak:
    """The dense peak for a table key (`h100-sxm`) or a DCGM/nvidia-smi model name (`NVIDIA H100 80GB HBM3`)."""
    for peak in DENSE_PEAKS:
        if model == peak.key:
            return peak
    for peak in DENSE_PEAKS:
        if re.search(peak.match, model):
            return peak
    known = ", ".join(p.key for p in DENSE_PEAKS)
    raise KeyError(f"no dense peak for GPU model {model!r}; known: {known}")


def training_flops_per_step(parameters: float, tokens_per_step: float) -> float:
    """Forward and backward of a dense transformer: about 6 x parameters x tokens."""
    return 6.0 * parameters * tokens_per_step


def mfu(
    parameters: float, tokens_per_step: float, step_seconds: float, world_size: int, peak_flops: float
) -> float:
    """Model FLOPs utilization: the arithmetic the model required over what the GPUs could do.

    6 x parameters x tokens per step / step time / (world size x dense peak per GPU).
    """
    if step_seconds <= 0 or world_size <= 0 or peak_flops <= 0:
        raise ValueError("step_seconds, world_size and peak_flops must be positive")
    if any(peak_flops == p.sparse_flops and p.sparse_flops != p.flops for p in DENSE_PEAKS):
        raise ValueError(f"{peak_flops:.4g} FLOP/s is a sparse datasheet peak; MFU takes the dense one")
    achieved = training_flops_per_step(parameters, tokens_per_step) / step_seconds
    return achieved / (world_size * peak_flops)


def goodput(useful_seconds: float, wall_seconds: float) -> float:
    """Useful training time over wall clock. Useful = step time of steps whose result survived (reached a
    checkpoint); restarts, requeues and steps recomputed after a failure count only in the wall clock."""
    if wall_seconds <= 0:
        raise ValueError("wall_seconds must be positive")
    if not 0 <= useful_seconds <= wall_seconds:
        raise ValueError(f"useful time {useful_seconds} s is outside 0..wall clock {wall_seconds} s")
    return useful_seconds / wall_seconds


def tokens_per_provisioned_gpu_hour(tokens: float, provisioned_gpu_hours: float) -> float:
    """Tokens served per GPU-hour *provisioned* to serving (traffic and headroom), never per busy hour."""
    if provisioned_gpu_hours <= 0:
        raise ValueError("provisioned_gpu_hours must be positive")
    return tokens / provisioned_gpu_hours


def warm_idle_share(idle_gpu_hours: float, provisioned_gpu_hours: float) -> float:
    """The fraction of provisioned serving GPU-hours that were warm (allocated) and idle by physics."""
    if provisioned_gpu_hours <= 0:
        raise ValueError("provisioned_gpu_hours must be positive")
    if not 0 <= idle_gpu_hours <= provisioned_gpu_hours:
        raise ValueError(f"idle {idle_gpu_hours} GPU-h is outside 0..provisioned {provisioned_gpu_hours}")
    return idle_gpu_hours / provisioned_gpu_hours
