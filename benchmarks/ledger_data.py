"""Synthetic data for the ledger benchmarks, each generator stating what it produced so the benchmark can
check that Prometheus holds exactly that (a benchmark over an empty Prometheus measures nothing).

- `month_openmetrics`: the recording rules' fleet-level OUTPUT series (what `ledger month` reads) for a
  July-like fleet, one sample per rules evaluation interval, as OpenMetrics for
  `promtool tsdb create-blocks-from openmetrics`.
- `fleet_exposition`: the rules' raw INPUT series (kube-state-metrics-shaped node and pod series, DCGM
  series per GPU) for a fleet of 8-GPU nodes in the text exposition format, for a real Prometheus to
  scrape and evaluate `gpu_finops/ledger/rules.yaml` over.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from gpu_finops.facts.dcgm import HOSTNAME_LABELS
from gpu_finops.ledger.conventions import BUCKETS, DCGM_INPUTS, DCGM_UNPLACED, KSM_INPUTS, RUNGS
from gpu_finops.ledger.rules import BUCKET, INPUTS, LARGEST_PLACEABLE, RUNG

# The source's typical July hour at 10,000 GPUs, as GPUs per bucket (tests/gpu_finops/ledger/july.py backfills it).
JULY_TYPICAL: dict[str, int] = {
    "unschedulable_repair_queue": 200,
    "unschedulable_driver_rollout": 60,
    "free_placeable": 300,
    "free_stranded": 250,
    "allocated_serving_traffic": 3000,
    "allocated_serving_headroom": 1000,
    "allocated_training_stepping": 4500,
    "allocated_training_restart": 690,
}
JULY_GPUS = 10_000


@dataclass
class MonthData:
    """What `month_openmetrics` wrote: the exact sample sums `ledger month` must read back."""

    gpus: int
    samples_per_series: int
    series: int = 0
    samples: int = 0
    installed_sum: int = 0
    bucket_sums: dict[str, int] = field(default_factory=dict)


def month_composition(gpus: int) -> dict[str, int]:
    """July's typical hour scaled to `gpus` (floors; the remainder goes to training stepping)."""
    if gpus <= 0:
        raise ValueError(f"gpus must be positive, got {gpus}")
    c = {b: JULY_TYPICAL.get(b, 0) * gpus // JULY_GPUS for b in BUCKETS}
    c["allocated_training_stepping"] += gpus - sum(c.values())
    return c


def _shift(i: int, headroom: int) -> int:
    """GPUs moved from warm headroom to serving traffic at sample i: deterministic, never constant, so
    Prometheus' chunks hold varying values as a real month's would (constant series compress to nothing)."""
    return (i * 7919) % (headroom // 4 + 1)


def month_openmetrics(
    gpus: int, start: datetime, days: int, step_seconds: int
) -> tuple[Iterator[str], MonthData]:
    """Lines of OpenMetrics (grouped by family, ending `# EOF`) and, once they are consumed, what they hold."""
    n = days * 86400 // step_seconds
    data = MonthData(gpus, n)
    base = month_composition(gpus)
    t0 = int(start.timestamp())
    times = [t0 + i * step_seconds for i in range(n)]
    shifts = [_shift(i, base["allocated_serving_headroom"]) for i in range(n)]
    unschedulable = base["unschedulable_repair_queue"] + base["unschedulable_driver_rollout"]
    allocated = sum(v for b, v in base.items() if b.startswith(("allocated_", "busy_")))

    def bucket_values(b: str) -> list[int]:
        v = base[b]
        if b == "allocated_serving_traffic":
            return [v + s for s in shifts]
        if b == "allocated_serving_headroom":
            return [v - s for s in shifts]
        return [v] * n

    def rung_values(r: str) -> list[int]:
        busy = base["allocated_serving_traffic"] + base["allocated_training_stepping"]
        fixed = {
            "installed": gpus,
            "schedulable": gpus - unschedulable,
            "allocated": allocated,
            "live_by_physics": allocated - base["allocated_training_restart"] // 2,
            "useful_training": base["allocated_training_stepping"] * 2 // 5,
        }
        return [busy + s for s in shifts] if r == "busy_by_metric" else [fixed[r]] * n

    def lines() -> Iterator[str]:
        families: list[tuple[str, str, dict[str, list[int]]]] = [
            (RUNG, "rung", {r: rung_values(r) for r in RUNGS}),
            (BUCKET, "bucket", {b: bucket_values(b) for b in BUCKETS}),
            (LARGEST_PLACEABLE, "", {"": [8 - (4 * i) // max(n - 1, 1) for i in range(n)]}),
            (
                INPUTS,
                "input",
                {name: [gpus // 8] * n for name in (*KSM_INPUTS, *DCGM_INPUTS)}
                # every DCGM series names its node: the unplaced counts the rules also record read 0
                | {name: [0] * n for name in DCGM_UNPLACED},
            ),
        ]
        for name, label, series in families:
            yield f"# TYPE {name} gauge"
            for key, values in series.items():
                selector = f'{name}{{{label}="{key}"}}' if label else name
                data.series += 1
                data.samples += len(values)
                if name == RUNG and key == "installed":
                    data.installed_sum = sum(values)
                if name == BUCKET:
                    data.bucket_sums[key] = sum(values)
                yield from (f"{selector} {v} {t}" for v, t in zip(values, times, strict=True))
        yield "# EOF"

    return lines(), data


# --- raw inputs -------------------------------------------------------------------------------------

# Node kinds of the raw fleet and their share of nodes: July-like (2 % repair, 0.6 % driver rollout,
# 3 % free and placeable, 2.5 % stranded, ~30 % serving traffic, ~10 % headroom, ~45 % training).
NODE_KINDS: dict[str, float] = {
    "repair": 0.02,  # cordoned, reason repair-queue, empty
    "rollout": 0.006,  # cordoned, reason driver-rollout, empty
    "notready": 0.002,  # NotReady, no reason label: unschedulable other
    "empty": 0.03,  # schedulable, no pods: 8 free, placeable
    "stranded": 0.2,  # a 4-GPU serving pod + a 3-GPU headroom pod: 1 free < the smallest shape (2)
    "traffic": 0.2,  # four 2-GPU serving-traffic pods
    "headroom": 0.025,  # one 8-GPU serving-headroom pod
    "stepping": 0.436,  # one 8-GPU training-stepping pod
    "stalled": 0.01,  # one 8-GPU training-stepping pod, busy by GPU_UTIL but idle by power and clock
    "restart": 0.069,  # one 8-GPU training-restart pod
    "unclassified": 0.002,  # one 8-GPU pod with no class label
}
# (class or None, GPUs) per pod on a node of each kind
PODS: dict[str, list[tuple[str | None, int]]] = {
    "stranded": [("serving-traffic", 4), ("serving-headroom", 3)],
    "traffic": [("serving-traffic", 2)] * 4,
    "headroom": [("serving-headroom", 8)],
    "stepping": [("training-stepping", 8)],
    "stalled": [("training-stepping", 8)],
    "restart": [("training-restart", 8)],
    "unclassified": [(None, 8)],
}
# DCGM (GPU_UTIL %, power W, SM clock MHz) by what the GPU is doing
DCGM_STATE: dict[str, tuple[float, float, float]] = {
    "serving-traffic": (85.0, 520.0, 1980.0),
    "serving-headroom": (0.0, 95.0, 1980.0),
    "training-stepping": (97.0, 650.0, 1980.0),
    "stalled": (100.0, 121.0, 345.0),  # the source's stalled GPU: a kernel spinning in a dead collective
    "training-restart": (0.0, 90.0, 1410.0),
    "unclassified": (50.0, 400.0, 1700.0),
    "free": (0.0, 60.0, 210.0),
}
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
REASON_LABEL = "label_gpu_finops_io_unschedulable_reason"
CLASS_LABEL = "label_gpu_finops_io_workload_class"


@dataclass(frozen=True)
class Fleet:
    """What `fleet_exposition` exposes, and what the rules must make of it."""

    gpus: int
    nodes: dict[str, int]  # kind -> node count
    pods: int  # Running pods holding GPUs
    pending_pods: int
    series: dict[str, int]  # metric family -> series
    buckets: dict[str, int]  # what fleet:ledger_bucket_gpus:sum must read
    rungs: dict[str, int]  # installed .. live_by_physics


def node_counts(nodes: int) -> dict[str, int]:
    """Nodes per kind: one of each, the rest by largest remainder of the kinds' shares."""
    if nodes < len(NODE_KINDS):
        raise ValueError(
            f"need at least {8 * len(NODE_KINDS)} GPUs for one node of each kind, got {8 * nodes}"
        )
    rest = nodes - len(NODE_KINDS)
    quotas = {k: Decimal(str(w)) * rest for k, w in NODE_KINDS.items()}
    counts = {k: int(q) for k, q in quotas.items()}
    for k in sorted(quotas, key=lambda k: -(quotas[k] - counts[k]))[: rest - sum(counts.values())]:
        counts[k] += 1
    return {k: c + 1 for k, c in counts.items()}


def fleet_exposition(gpus: int) -> tuple[dict[str, bytes], Fleet]:
    """Two expositions, keyed by scrape path ('ksm', 'dcgm'), for `gpus` GPUs on 8-GPU nodes."""
    if gpus % 8:
        raise ValueError(f"gpus must be a multiple of 8 (8-GPU nodes), got {gpus}")
    counts = node_counts(gpus // 8)
    fam: dict[str, list[str]] = {}

    def add(name: str, labels: str, value: float) -> None:
        fam.setdefault(name, []).append(f"{name}{{{labels}}} {value:g}")

    gpu = 'resource="nvidia_com_gpu",unit="integer"'
    buckets = dict.fromkeys(BUCKETS, 0)
    busy = live = pods = 0
    n = 0
    for kind, count in counts.items():
        for _ in range(count):
            node = f"gpu-node-{n:05d}"
            n += 1
            cordoned, ready = kind in ("repair", "rollout"), kind != "notready"
            add("kube_node_status_capacity", f'node="{node}",{gpu}', 8)
            add("kube_node_status_allocatable", f'node="{node}",{gpu}', 8)
            for status in ("true", "false", "unknown"):
                on = (status == "true") == ready and status != "unknown"
                add(
                    "kube_node_status_condition",
                    f'node="{node}",condition="Ready",status="{status}"',
                    int(on),
                )
            add("kube_node_spec_unschedulable", f'node="{node}"', int(cordoned))
            reason = {"repair": "repair-queue", "rollout": "driver-rollout"}.get(kind)
            add("kube_node_labels", f'node="{node}"' + (f',{REASON_LABEL}="{reason}"' if reason else ""), 1)
            index = 0
            for p, (cls, size) in enumerate(PODS.get(kind, [])):
                pods += 1
                ns, pod = "serving" if cls and cls.startswith("serving") else "training", f"{node}-p{p}"
                ident = f'namespace="{ns}",pod="{pod}",uid="uid-{pod}"'
                add(
                    "kube_pod_container_resource_limits",
                    f'{ident},container="main",node="{node}",{gpu}',
                    size,
                )
                for phase in POD_PHASES:
                    add("kube_pod_status_phase", f'{ident},phase="{phase}"', int(phase == "Running"))
                add("kube_pod_labels", ident + (f',{CLASS_LABEL}="{cls}"' if cls else ""), 1)
                add("kube_pod_info", f'{ident},node="{node}",created_by_kind="Job"', 1)
                state = "stalled" if kind == "stalled" else cls or "unclassified"
                bucket = (
                    "busy_by_metric_idle_by_physics"
                    if kind == "stalled"
                    else f"allocated_{state.replace('-', '_')}"
                )
                buckets[bucket] += size
                for _ in range(size):
                    busy, live = _gpu(add, node, index, state, (ns, pod), busy, live)
                    index += 1
            for _ in range(index, 8):
                busy, live = _gpu(add, node, index, "free", None, busy, live)
                index += 1
            free = 8 - sum(size for _, size in PODS.get(kind, []))
            if kind in ("repair", "rollout", "notready"):
                buckets[
                    {"repair": "unschedulable_repair_queue", "rollout": "unschedulable_driver_rollout"}.get(
                        kind, "unschedulable_other"
                    )
                ] += 8
            elif free:
                buckets["free_stranded" if free < 2 else "free_placeable"] += free
    # demand that is not running: Pending 8-GPU training pods (their shape counts; they hold nothing)
    pending = max(1, counts["stepping"] // 100)
    for p in range(pending):
        ident = f'namespace="training",pod="pending-{p}",uid="uid-pending-{p}"'
        add("kube_pod_container_resource_limits", f'{ident},container="main",node="",{gpu}', 8)
        for phase in POD_PHASES:
            add("kube_pod_status_phase", f'{ident},phase="{phase}"', int(phase == "Pending"))
        add("kube_pod_labels", f'{ident},{CLASS_LABEL}="training-stepping"', 1)
        add("kube_pod_info", f'{ident},node="",created_by_kind="Job"', 1)
    unschedulable = 8 * (counts["repair"] + counts["rollout"] + counts["notready"])
    allocated = sum(v for b, v in buckets.items() if b.startswith(("allocated_", "busy_")))
    rungs = {
        "installed": gpus,
        "schedulable": gpus - unschedulable,
        "allocated": allocated,
        "busy_by_metric": busy,
        "live_by_physics": live,
    }

    def render(names: list[str]) -> bytes:
        out: list[str] = []
        for name in names:
            out += [f"# HELP {name} synthetic", f"# TYPE {name} gauge", *fam[name]]
        return ("\n".join(out) + "\n").encode()

    series = {name: len(lines) for name, lines in fam.items()}
    ksm = [name for name in fam if name.startswith("kube_")]
    dcgm = [name for name in fam if name.startswith("DCGM_")]
    fleet = Fleet(gpus, counts, pods, pending, series, buckets, rungs)
    return {"ksm": render(ksm), "dcgm": render(dcgm)}, fleet


def _gpu(
    add, node: str, index: int, state: str, pod: tuple[str, str] | None, busy: int, live: int
) -> tuple[int, int]:
    """Add one GPU's three DCGM series; return the busy and live counts with this GPU's."""
    util, power, clock = DCGM_STATE[state]
    # the node under both spellings: `hostname` on every other node (dcgm-exporter 4.8.3, pinned),
    # `Hostname` on the rest (before 4.8.3), as a fleet mid exporter rollout; the rules read either
    spelling = HOSTNAME_LABELS[int(node.rsplit("-", 1)[-1]) % 2]
    labels = f'gpu="{index}",UUID="GPU-{node}-{index}",device="nvidia{index}",modelName="NVIDIA H100 80GB HBM3",{spelling}="{node}"'
    if pod:
        labels += f',namespace="{pod[0]}",pod="{pod[1]}",container="main"'
    add("DCGM_FI_DEV_GPU_UTIL", labels, util)
    add("DCGM_FI_DEV_POWER_USAGE", labels, power)
    add("DCGM_FI_DEV_SM_CLOCK", labels, clock)
    return busy + (util > 10), live + (power > 40 and clock > 600)
