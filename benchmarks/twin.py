"""The fleet twin at scale (`python -m benchmarks twin --nodes 1250`): figures, never pass/fail.

On the running local target (start it first, under the lock: `flock /tmp/gpu-finops-local.lock gpu-finops
local up`; this leaves it up):
- Kueue admission throughput on the full stack: `--burst` one-GPU Jobs submitted at once to one tenant whose
  quota holds them all, workloads per second from the first submission to the last QuotaReserved, beside
  Kueue's own scheduler benchmark (15,000 workloads in about 351 s on a stripped-down Kueue with no nodes:
  kubernetes-sigs/kueue test/performance/scheduler, its README's baseline);
- the compressed day: `--day` trace hours of the generated multi-tenant trace at `--compression`, its wall
  time beside the trace's;
- the peak resident memory (VmHWM) of every supervised process of the target after the runs;
- the product at that size, while the day runs (its own thread, once the fleet is up and busy): the
  in-cluster collector's cycles (read from its log: records and seconds per 60 s interval), `gpu-finops
  ledger ladder` and `gpu-finops diagnose --all` as a user runs them (`gpu-finops local env`), wall seconds.

Every figure is printed as it is measured (flushed), so a run cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

KUEUE_BASELINE = (15_000, 351.0)  # workloads, seconds: Kueue's scheduler benchmark, no nodes


def cpu_seconds(run_dir: Path) -> dict[str, float]:
    """user + system CPU seconds so far of every live supervised process (/proc/PID/stat)."""
    from local.cluster.supervisor import Supervisor

    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for name, (proc, alive) in Supervisor(run_dir).status().items():
        if alive:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            out[name] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14, 15)
    return out


def _cpu_used(before: dict[str, float], after: dict[str, float], wall: float) -> None:
    """Which process used the machine's cores during the day: the bottleneck's first witness."""
    used = sorted(((after[n] - before.get(n, 0.0), n) for n in after), reverse=True)
    say(f"  CPU during the day ({wall:.0f} s wall, 2 cores = {2 * wall:.0f} core-s), top processes: "
        + ", ".join(f"{n} {c:.0f} s ({100 * c / wall:.0f} % of a core)" for c, n in used[:8]))  # fmt: skip


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


CYCLE = re.compile(r"cycle \[[^)]*\): (\d+) record\(s\), (\d+) queries, ([0-9.]+)s")


def say(text: str) -> None:
    print(text, flush=True)


def collector_cycles(run_dir: Path, nodes: int) -> list[tuple[int, int, float]]:
    """(records, queries, seconds) of each cycle the in-cluster collector logged with at least `nodes`
    records (the fleet's nodes, each one record per interval)."""
    log = run_dir / "logs" / "collector.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    rows = [(int(a), int(b), float(c)) for a, b, c in CYCLE.findall(text)]
    return [r for r in rows if r[0] >= nodes]


def product_at_size(cluster: Any, nodes: int, ready: threading.Event, stop: threading.Event) -> None:
    """`ledger ladder` and `diagnose --all` timed as a user runs them, once the fleet is up and busy."""
    from local.cluster import product

    env = dict(os.environ)
    for line in product.exports(cluster).splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value
    if not ready.wait(timeout=3600) or stop.is_set():
        return
    for argv in (("ledger", "ladder"), ("diagnose", "--all")):
        t = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "gpu_finops.cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        say(f"product at {nodes} nodes: `gpu-finops {' '.join(argv)}` exit {done.returncode} in "
            f"{time.monotonic() - t:.1f} s wall{'' if done.returncode == 0 else f' ({tail[0][:200]})'}")  # fmt: skip


def _h(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.2f}"


def _when_busy(kube: Any, nodes: int, ready: threading.Event, stop: threading.Event) -> None:
    """Sets `ready` once the fleet's nodes are all there and a tenth of them hold a running pod."""
    from twin.fleet import NODE_PREFIX

    while not stop.is_set():
        try:
            ours = [n for n in kube.core.list_node().items if n.metadata.name.startswith(NODE_PREFIX)]
            busy = {p.spec.node_name for p in kube.core.list_pod_for_all_namespaces(
                field_selector="status.phase=Running").items if p.spec.node_name}  # fmt: skip
            if len(ours) >= nodes and sum(1 for n in ours if n.metadata.name in busy) >= nodes // 10:
                ready.set()
                return
        except Exception:  # the API server busy: try again
            pass
        stop.wait(15)


def day_trace(tenants: tuple[Any, ...], hours: float, compression: float, load: float) -> Any:
    """The multi-tenant day: the generator's job mix weighted to larger, longer jobs (a fleet of 8-GPU
    nodes runs mostly multi-GPU work, and fewer jobs per GPU-hour keep a 2-core control plane's submission
    rate near 4 a second at 96x), each job's duration clipped at the day's end so the replay ends with the
    day (log-normal tails would otherwise run for days past it)."""
    import dataclasses

    from twin.generate import TenantLoad, generate

    sizes = {1: 0.1, 2: 0.1, 4: 0.3, 8: 0.5}
    mean_gpus = sum(k * v for k, v in sizes.items())
    proto = TenantLoad("x", 1.0, sizes=sizes, training_median_s=6 * 3600.0, serving_mean_s=8 * 3600.0)
    mean_h = (
        proto.serving_share * proto.serving_mean_s
        + (1 - proto.serving_share) * proto.training_median_s * 1.65
    ) / 3600
    loads = [dataclasses.replace(proto, name=t.name, arrivals_per_hour=load * t.gpu_quota / (mean_gpus * mean_h))
             for t in tenants]  # fmt: skip
    horizon = hours * 3600
    trace = generate(loads, horizon_s=horizon, compression=compression, seed=1, note="benchmarks/twin.py day")
    jobs = tuple(dataclasses.replace(j, duration_s=round(max(min(j.duration_s, horizon - j.submit_s), 60.0), 3))
                 for j in trace.jobs)  # fmt: skip
    return dataclasses.replace(trace, jobs=jobs)


def main(argv: list[str]) -> None:
    from local.cluster.lifecycle import LocalCluster

    p = argparse.ArgumentParser(prog="python -m benchmarks twin")
    p.add_argument("--nodes", type=int, default=1250, help="static nodes of 8 GPUs (1,250 = 10,000 GPUs)")
    p.add_argument("--burst", type=int, default=1000, help="one-GPU Jobs submitted at once (0: skip)")
    p.add_argument("--day", type=float, default=24.0, help="trace hours of the multi-tenant day (0: skip)")
    p.add_argument("--compression", type=float, default=96.0, help="the day's (96: 15 wall minutes)")
    p.add_argument("--load", type=float, default=0.7, help="each tenant's offered load, of its quota")
    p.add_argument(
        "--scale-out", type=int, default=0, help="8-GPU pods for Karpenter to place from zero (0: skip)"
    )
    p.add_argument(
        "--scale-out-hold", type=float, default=300.0, help="wall s each scale-out pod holds its node"
    )
    p.add_argument("--out", type=Path, help="the day's readout JSON")
    args = p.parse_args(argv)
    cluster = LocalCluster()
    # stopped by `timeout` (SIGTERM): still say where it got to and what the target's processes hold
    signal.signal(signal.SIGTERM, _stopped)
    try:
        _run(args, cluster)
    except TimedOut as exc:
        say(f"{exc}: the figures above are what it measured")
    finally:
        for name, c in sorted(cpu_seconds(cluster.run_dir).items(), key=lambda x: -x[1]):
            say(f"  CPU since local up {name:24} {c:8.0f} s")
        for name, mib in sorted(peak_rss_mib(cluster.run_dir).items()):
            say(f"  peak RSS {name:24} {mib:8.0f} MiB")


class TimedOut(Exception):
    pass


def _stopped(signum: int, frame: Any) -> None:
    raise TimedOut("stopped by SIGTERM (timeout)")


def _run(args: argparse.Namespace, cluster: Any) -> None:
    from gpu_finops.facts.config import Tenant
    from infra.objects.kueue import SHIPPED
    from local.cluster.product import prometheus_url, store_path
    from twin.cli_twin import product_line
    from twin.fleet import Fleet
    from twin.prepare import TwinError
    from twin.readout import readout
    from twin.replay import replay
    from twin.trace import Trace, TraceJob

    kube = cluster.kube()
    gpus = args.nodes * 8
    began = time.monotonic()
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
        trace = day_trace(tenants, args.day, args.compression, args.load)
        say(f"compressed day: {len(trace.jobs)} jobs of {len(tenants)} tenants on {gpus} GPUs, {args.day} trace h "
            f"at {args.compression:g}x (ideal {trace.wall(trace.horizon_s):.0f} wall s)")  # fmt: skip
        ready, stop = threading.Event(), threading.Event()
        threading.Thread(target=product_at_size, args=(cluster, args.nodes, ready, stop), daemon=True).start()
        busy = threading.Thread(target=_when_busy, args=(kube, args.nodes, ready, stop), daemon=True)
        busy.start()
        t = time.monotonic()
        cpu0 = cpu_seconds(cluster.run_dir)
        try:
            r = readout(replay(kube, fleet, trace, "strict", echo=say, prometheus_url=prometheus_url(),
                               store=f"sqlite:{store_path(cluster)}"))  # fmt: skip
        except TwinError as exc:  # the figure is how far it got: said, and the memory still read
            say(f"compressed day did not complete after {time.monotonic() - t:.0f} s wall: {exc}")
            args.burst = 0  # its Jobs and nodes are still there: a burst on top would measure them too
            r = None
        finally:
            stop.set()
            _cpu_used(cpu0, cpu_seconds(cluster.run_dir), time.monotonic() - t)
    if args.day and r is not None:
        led = r["ledger"]
        say(f"compressed day: {len(trace.jobs)} jobs, {args.day} trace h at {args.compression:g}x in "
            f"{time.monotonic() - t:.0f} s wall (replay {r['run']['wall_seconds']:.0f} s, ideal "
            f"{trace.wall(trace.horizon_s):.0f} s); ledger {led['buckets_sum_percent']:.3f} % of "
            f"{led['installed_gpu_hours']:.0f} installed GPU-h; buckets {json.dumps({k: round(v) for k, v in led['bucket_gpu_hours'].items()})}")  # fmt: skip
        for name, f in r["tenants"].items():
            say(f"  {name}: admitted {f['admitted']}/{f['jobs']}, wait p50/p95/p99 "
                f"{_h(f['wait_p50_s'])}/{_h(f['wait_p95_s'])}/{_h(f['wait_p99_s'])} trace h, peak {f['peak_admitted_gpus']} GPUs")  # fmt: skip
        say(f"  diagnose --all at the peak (in the twin's thread): {json.dumps(r['diagnose_at_peak'])}")
        say(f"  {product_line(r['product'])}")
        cycles = collector_cycles(cluster.run_dir, args.nodes)
        if cycles:
            secs = [c[2] for c in cycles]
            say(f"  in-cluster collector: {len(cycles)} cycles of >= {args.nodes} records: "
                f"{min(secs):.2f}-{max(secs):.2f} s (median {sorted(secs)[len(secs) // 2]:.2f}) per 60 s interval, "
                f"{cycles[-1][1]} queries a cycle")  # fmt: skip
        else:
            say(f"  in-cluster collector: no cycle with >= {args.nodes} records in its log")
        if args.out:
            args.out.write_text(json.dumps(r, indent=1, default=str))
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
        burst = Trace(60.0, 1.0, None, ("bench",),
                      tuple(TraceJob(f"b-{i:05d}", "bench", 0.0, 1, 600.0) for i in range(args.burst)))  # fmt: skip
        t = time.monotonic()
        try:
            run = replay(kube, one, burst, "bench", echo=say)
        except TwinError as exc:  # the progress lines above say how far admission got; the rest still runs
            say(f"admission burst did not complete after {time.monotonic() - t:.0f} s wall: {exc}")
            run = None
            args.scale_out = (
                0  # its Jobs and nodes are still there: a scale-out on top would measure them too
            )
        if run is not None:
            r = readout(run)
            starts = [j["start_s"] for j in r["jobs"] if j["start_s"] is not None]
            span = max(starts) / burst.compression  # wall s from the first submission to the last admission
            submitted = max(run.submitted.values()) - run.start
            say(f"admission, {args.burst} one-GPU workloads on {gpus} GPUs (full stack): {len(starts) / span:.1f} "
                f"workloads/s ({len(starts)} admitted in {span:.1f} s; the twin's own submission took {submitted:.1f} s); "
                f"Kueue's scheduler benchmark: {KUEUE_BASELINE[0] / KUEUE_BASELINE[1]:.1f}/s (no nodes); "
                f"whole run {time.monotonic() - t:.0f} s wall")  # fmt: skip
    if args.scale_out:
        n = args.scale_out
        pool = Fleet(
            "g6e.48xlarge", 0, 0, 0, n, (Tenant("bench", n * 8),), {"bench": {"bench": SHIPPED}}, "us-east-1a"
        )
        # each pod holds its node for --scale-out-hold wall s, so that every pod needs a node of its own: with
        # 10 s pods Karpenter's nodes were freed and reused as it went, and the figure mixed reuse with scale-out
        hold = args.scale_out_hold * 60.0
        pods = Trace(60.0, 1.0, None, ("bench",),
                     tuple(TraceJob(f"k-{i:05d}", "bench", 0.0, 8, hold) for i in range(n)))  # fmt: skip
        run = replay(kube, pool, pods, "bench", echo=say)
        seen = [x for x in run.observer.pods.values() if x.running is not None]
        span = max(x.running for x in seen) - run.start if seen else float("nan")
        nodes = {x.node for x in seen}
        say(f"Karpenter scale-out: {len(seen)} of {n} pending 8-GPU pods Running on {len(nodes)} distinct new nodes "
            f"in {span:.0f} s from the first submission, each held {args.scale_out_hold:g} wall s "
            f"(its kwok suite's threshold: 1,000 pods within 120 s)")  # fmt: skip
    say(f"all in {time.monotonic() - began:.0f} s wall")
