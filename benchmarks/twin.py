"""The fleet twin at scale (`python -m benchmarks twin --nodes 1250`): figures, never pass/fail.

On the running local target (start it first, under the lock: `flock /tmp/gpu-finops-local.lock gpu-finops
local up`; this leaves it up):
- Kueue admission throughput on the full stack: `--burst` one-GPU Jobs submitted at once to one tenant whose
  quota holds them all, workloads per second from the first submission to the last QuotaReserved, beside
  Kueue's own scheduler benchmark (15,000 workloads in about 351 s on a stripped-down Kueue with no nodes:
  kubernetes-sigs/kueue test/performance/scheduler, its README's baseline);
- the compressed day: `--day` trace hours of the generated multi-tenant trace at `--compression`, its wall
  time beside the trace's;
- the peak resident memory (VmHWM) of every supervised process of the target after the runs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

KUEUE_BASELINE = (15_000, 351.0)  # workloads, seconds: Kueue's scheduler benchmark, no nodes


def peak_rss_mib(run_dir: Path) -> dict[str, float]:
    from local.cluster.supervisor import Supervisor

    out = {}
    for name, (proc, alive) in Supervisor(run_dir).status().items():
        if not alive:
            continue
        for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                out[name] = int(line.split()[1]) / 1024
    return out


def main(argv: list[str]) -> None:
    from facts.config import Tenant
    from infra.objects.kueue import SHIPPED
    from local.cluster.lifecycle import LocalCluster
    from twin.fleet import Fleet
    from twin.generate import TenantLoad, generate
    from twin.readout import readout
    from twin.replay import replay
    from twin.trace import Trace, TraceJob

    p = argparse.ArgumentParser(prog="python -m benchmarks twin")
    p.add_argument("--nodes", type=int, default=1250, help="static nodes of 8 GPUs (1,250 = 10,000 GPUs)")
    p.add_argument("--burst", type=int, default=2000, help="one-GPU Jobs submitted at once (0: skip)")
    p.add_argument("--day", type=float, default=24.0, help="trace hours of the multi-tenant day (0: skip)")
    p.add_argument("--compression", type=float, default=240.0)
    p.add_argument(
        "--scale-out", type=int, default=125, help="8-GPU pods for Karpenter to place from zero (0: skip)"
    )
    args = p.parse_args(argv)
    cluster = LocalCluster()
    kube = cluster.kube()
    gpus = args.nodes * 8
    if args.burst:
        one = Fleet(
            "g6e.48xlarge",
            args.nodes,
            0,
            0,
            0,
            (Tenant("bench", gpus),),
            {"bench": {"bench": SHIPPED}},
            "us-east-1a",
        )
        burst = Trace(
            60.0,
            1.0,
            None,
            ("bench",),
            tuple(TraceJob(f"b-{i:05d}", "bench", 0.0, 1, 600.0) for i in range(args.burst)),
        )
        t = time.monotonic()
        r = readout(replay(kube, one, burst, "bench"))
        starts = [j["start_s"] for j in r["jobs"] if j["start_s"] is not None]
        span = max(starts) / burst.compression  # wall seconds from the first submission to the last admission
        print(f"admission, {args.burst} one-GPU workloads on {gpus} GPUs (full stack): {args.burst / span:.1f} "
              f"workloads/s ({span:.1f} s); Kueue's scheduler benchmark: {KUEUE_BASELINE[0] / KUEUE_BASELINE[1]:.1f}/s "
              f"(no nodes); whole run {time.monotonic() - t:.0f} s wall")  # fmt: skip
    if args.scale_out:
        n = args.scale_out
        pool = Fleet(
            "g6e.48xlarge", 0, 0, 0, n, (Tenant("bench", n * 8),), {"bench": {"bench": SHIPPED}}, "us-east-1a"
        )
        pods = Trace(
            60.0,
            1.0,
            None,
            ("bench",),
            tuple(TraceJob(f"k-{i:05d}", "bench", 0.0, 8, 600.0) for i in range(n)),
        )
        run = replay(kube, pool, pods, "bench")
        running = [x.running for x in run.observer.pods.values() if x.running is not None]
        span = max(running) - run.start if running else float("nan")
        print(f"Karpenter scale-out: {len(running)} of {n} pending 8-GPU pods Running on new nodes in {span:.0f} s "
              f"(its kwok suite's threshold: 1,000 pods within 120 s)")  # fmt: skip
    if args.day:
        tenants = tuple(Tenant(f"team-{c}", gpus // 4) for c in "abcd")
        fleet = Fleet(
            "g6e.48xlarge",
            args.nodes,
            0,
            0,
            0,
            tenants,
            {"strict": {t.name: SHIPPED for t in tenants}},
            "us-east-1a",
        )
        loads = [TenantLoad(t.name, 0.8 * t.gpu_quota / (3.4 * 2.2)) for t in tenants]
        trace = generate(loads, horizon_s=args.day * 3600, compression=args.compression, seed=1)
        t = time.monotonic()
        r = readout(replay(kube, fleet, trace, "strict"))
        led = r["ledger"]
        print(f"compressed day: {len(trace.jobs)} jobs, {args.day} trace h at {args.compression}x in "
              f"{time.monotonic() - t:.0f} s wall (ideal {args.day * 3600 / args.compression:.0f} s); ledger "
              f"{led['buckets_sum_percent']:.1f} % of {led['installed_gpu_hours']:.0f} installed GPU-h")  # fmt: skip
    for name, mib in sorted(peak_rss_mib(cluster.run_dir).items()):
        print(f"  peak RSS {name:24} {mib:8.0f} MiB")
