"""`diagnose --all`'s engine at fleet size: a synthetic cluster of N 8-GPU nodes, every GPU held, DCGM for
every card, P pending 8-GPU pods (admitted workloads whose pods wait for devices) and W unadmitted workloads.
Times the whole `diagnose_all` and, on a sample, the same diagnoses each built from scratch (what the engine
did before it shared one index per cluster), and the size of the JSON a user gets. Figures, never pass/fail.

    python -m benchmarks diagnose [--nodes 1250] [--pending 600] [--unadmitted 600] [--sample 5]
"""

from __future__ import annotations

import argparse
import json
import random
import time

from gpu_finops.diagnose.engine import diagnose_all, diagnose_pod
from gpu_finops.diagnose.model import (
    GPU,
    Cluster,
    GpuStats,
    Holder,
    NodeFacts,
    PodFacts,
    Taint,
    Toleration,
    WorkloadFacts,
)
from gpu_finops.facts.conditions import Condition
from gpu_finops.facts.kube_keys import GPU_RESOURCE, LABEL_INSTANCE_TYPE
from gpu_finops.model.workload import ADMITTED, QUOTA_RESERVED

GPUS_PER_NODE = 8
SIZES = (1, 2, 4, 8)


def fleet(nodes: int, pending: int, unadmitted: int, seed: int = 1) -> tuple[list[PodFacts], Cluster]:
    """Every GPU of `nodes` held by pods of sizes 1-8 (drawn from a seeded generator), so every pending pod's diagnosis
    walks every node, every holder and every card: the worst case for the engine, and a full fleet's."""
    rng = random.Random(seed)
    taint = (Taint(GPU_RESOURCE, "NoSchedule", "true"),)
    node_list, holders, stats = [], [], []
    for i in range(nodes):
        name = f"node-{i:05d}"
        node_list.append(NodeFacts(name, {LABEL_INSTANCE_TYPE: "p5.48xlarge"}, taint, {GPU: GPUS_PER_NODE}))
        used = 0
        while used < GPUS_PER_NODE:
            size = min(GPUS_PER_NODE - used, rng.choice(SIZES))
            h = Holder("train", f"run-{i:05d}-{used}", name, {GPU: size})
            holders.append(h)
            for g in range(used, used + size):
                stats.append(
                    GpuStats(
                        name,
                        str(g),
                        f"GPU-{i:05d}-{g}",
                        h.key,
                        sm_active=rng.random(),
                        sm_occupancy=0.3,
                        fb_used_mib=40_000.0,
                        fb_free_mib=40_000.0,
                        pcie_tx_bps=1e8,
                        pcie_rx_bps=1e8,
                    )
                )
            used += size
    tolerate = (Toleration(GPU_RESOURCE, "Exists"),)
    admitted = {
        QUOTA_RESERVED: Condition(QUOTA_RESERVED, "True", QUOTA_RESERVED, ""),
        ADMITTED: Condition(ADMITTED, "True", ADMITTED, ""),
    }
    waiting = {QUOTA_RESERVED: Condition(QUOTA_RESERVED, "False", "Pending", "couldn't assign flavors")}
    pods, workloads = [], []
    for k in range(pending):
        wl = f"job-{k:05d}"
        pods.append(
            PodFacts(
                "serve",
                f"{wl}-pod",
                gpu_requests={GPU: GPUS_PER_NODE},
                tolerations=tolerate,
                workload=wl,
                scheduler_message=f"0/{nodes} nodes are available: {nodes} Insufficient {GPU}.",
            )
        )
        workloads.append(WorkloadFacts("serve", wl, "serve", dict(admitted), job_suspended=False))
    for k in range(unadmitted):
        wl = f"queued-{k:05d}"
        template = PodFacts("batch", wl, gpu_requests={GPU: 4}, tolerations=tolerate, workload=wl)
        workloads.append(
            WorkloadFacts("batch", wl, "batch", dict(waiting), job_suspended=True, pod_template=template)
        )
    cluster = Cluster(
        nodes=tuple(node_list),
        holders=tuple(holders),
        workloads=tuple(workloads),
        stats=tuple(stats),
        window_s=300,
    )
    return pods, cluster


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks diagnose", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--nodes", type=int, default=1250, help="8-GPU nodes (1,250: 10,000 GPUs)")
    parser.add_argument("--pending", type=int, default=600, help="pending 8-GPU pods")
    parser.add_argument("--unadmitted", type=int, default=600, help="workloads Kueue holds back")
    parser.add_argument("--sample", type=int, default=5, help="diagnoses timed one by one from scratch")
    args = parser.parse_args(argv)

    t = time.perf_counter()
    pods, cluster = fleet(args.nodes, args.pending, args.unadmitted)
    built = time.perf_counter() - t
    print(
        f"diagnose --all's engine: {args.nodes:,} nodes ({args.nodes * GPUS_PER_NODE:,} GPUs), "
        f"{len(cluster.holders):,} holders, {len(cluster.stats or ()):,} card rows, {len(pods):,} pending pods, "
        f"{args.unadmitted:,} unadmitted workloads (built in {built:.1f}s)",
        flush=True,
    )
    t = time.perf_counter()
    diagnoses = diagnose_all(pods, cluster)
    whole = time.perf_counter() - t
    per = whole / max(len(diagnoses), 1)
    print(
        f"  diagnose_all: {len(diagnoses):,} diagnoses in {whole:.2f}s ({per * 1000:.1f} ms each)", flush=True
    )

    sample = pods[: args.sample]
    if sample:
        t = time.perf_counter()
        for pod in sample:
            diagnose_pod(pod, cluster)  # each builds the cluster's index again, as every diagnosis once did
        scratch = (time.perf_counter() - t) / len(sample)
        print(
            f"  one diagnosis from scratch (its own index): {scratch * 1000:.0f} ms, "
            f"{scratch / per:.0f}x one inside diagnose_all; {len(diagnoses):,} that way: about "
            f"{scratch * len(diagnoses):.0f}s",
            flush=True,
        )
    t = time.perf_counter()
    text = json.dumps([d.to_dict() for d in diagnoses], default=str)
    print(
        f"  the JSON of every diagnosis: {len(text) / 2**20:.0f} MiB, serialized in "
        f"{time.perf_counter() - t:.1f}s (each carries its evidence: every node it looked at)",
        flush=True,
    )


if __name__ == "__main__":
    main()
