"""The twin's Job submission against the running local target (`python -m benchmarks twin-submit`):
Jobs a second through the API server and Kueue's webhooks, one request after another with the client's
model deserialisation (the twin's submission before twin/submit.py) beside twin/submit.py's pool of
threads; with `--profile`, where the sequential client's time goes (cProfile, top functions by own time).

Start the target first, under the lock (`flock /tmp/gpu-finops-local.lock gpu-finops local up`). The
Jobs go to a one-tenant fleet's LocalQueue on `--nodes` static nodes (quota for all of them, so Kueue
admits and unsuspends them as a run's would) and are deleted after each mode. Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
import uuid
from typing import Any


def say(text: str) -> None:
    print(text, flush=True)


def _bodies(trace: Any, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    from twin.jobs import job_object

    return [(j.tenant, job_object(trace, j, run_id)) for j in trace.jobs]


def sequential(kube: Any, bodies: list[tuple[str, dict[str, Any]]]) -> float:
    """The twin's submission before twin/submit.py: one create after another, the response deserialised."""
    t = time.monotonic()
    for ns, body in bodies:
        kube.batch.create_namespaced_job(ns, body).metadata.uid  # noqa: B018 (as the loop read it)
    return time.monotonic() - t


def pooled(kube: Any, bodies: list[tuple[str, dict[str, Any]]], workers: int) -> float:
    from twin.submit import Submitter

    s = Submitter(kube, on_created=lambda uid: None, workers=workers)
    t = time.monotonic()
    for ns, body in bodies:
        s.submit(ns, body, due=time.time())
    s.close()
    took = time.monotonic() - t
    if s.errors:
        raise SystemExit(f"{len(s.errors)} creates refused, the first: {s.errors[0]}")
    return took


def main(argv: list[str]) -> None:
    from gpu_finops.facts.config import Tenant
    from infra.objects.kueue import SHIPPED
    from local.cluster.lifecycle import LocalCluster
    from twin import prepare
    from twin.fleet import Fleet
    from twin.jobs import RUN_LABEL
    from twin.trace import Trace, TraceJob

    p = argparse.ArgumentParser(prog="python -m benchmarks twin-submit")
    p.add_argument("--jobs", type=int, default=200, help="Jobs per mode")
    p.add_argument("--nodes", type=int, default=8, help="static nodes of 8 GPUs for them")
    p.add_argument("--workers", type=int, nargs="*", default=[6], help="pool sizes to try")
    p.add_argument("--profile", action="store_true", help="cProfile the sequential mode")
    args = p.parse_args(argv)
    kube = LocalCluster().kube()
    fleet = Fleet("g6e.48xlarge", args.nodes, 0, 0, 0, (Tenant("bench", args.nodes * 8),),
                  {"bench": {"bench": SHIPPED}}, "us-east-1a")  # fmt: skip
    prepare.expect_clean_slate(kube, fleet)
    prepare.apply_pools(kube, fleet)
    prepare.apply_policy(kube, fleet, "bench")
    prepare.create_nodes(kube, fleet, say)
    say(
        f"{args.nodes} nodes of 8 GPUs ready; {args.jobs} one-GPU Jobs per mode, each held 600 trace s at 60x"
    )
    modes: list[tuple[str, Any, int]] = [("sequential (before)", None, args.jobs),
                                         *((f"pool of {w}", w, args.jobs) for w in args.workers)]  # fmt: skip
    if args.profile:
        modes.append(("sequential under cProfile", "profile", max(args.jobs // 4, 1)))
    try:
        for label, workers, jobs in modes:
            run_id = f"twin-{uuid.uuid4().hex[:8]}"
            trace = Trace(60.0, 1.0, None, ("bench",),
                          tuple(TraceJob(f"s-{i:05d}", "bench", 0.0, 1, 600.0) for i in range(jobs)))  # fmt: skip
            bodies = _bodies(trace, run_id)
            cpu = time.process_time()
            if workers == "profile":  # where the client's time goes (cProfile slows the Python part)
                prof = cProfile.Profile()
                took = prof.runcall(sequential, kube, bodies)
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
                say(out.getvalue())
            elif workers is None:
                took = sequential(kube, bodies)
            else:
                took = pooled(kube, bodies, workers)
            cpu = time.process_time() - cpu
            say(f"submission, {label}: {jobs} Jobs in {took:.1f} s wall = {jobs / took:.1f} Jobs/s; "
                f"the client's own CPU {cpu:.1f} s ({100 * cpu / took:.0f} % of the wall time)")  # fmt: skip
            prepare.delete_run(kube, fleet, RUN_LABEL, run_id)
            prepare.create_nodes(kube, fleet, lambda line: None)  # delete_run removes the nodes too
            prepare.expect_clean_slate(kube, fleet)
    finally:
        for n in fleet.node_names():
            prepare._delete_quietly(kube.core.delete_node, n)
