"""Karpenter's own scale-out on the local target (`python -m benchmarks scaleout --pods 1250`): figures, never
pass/fail.

N pending 8-GPU pods are created directly (plain pods: Kueue manages only batch/Job here, so none of them waits
on an admission or a Job sync), each tolerating the GPU taint and held Running `--hold` wall seconds by kwok's
pod-complete stage, so that every pod needs a node of its own. The only NodePool is the fleet's (the
addons stack's NodePool as `local up` renders it, for g6e.48xlarge: 8 GPUs a node), from zero nodes.
`python -m benchmarks twin --scale-out N` measures the whole Job chain instead (Kueue, the Job controller,
then Karpenter); this measures what Karpenter and the scheduler do once the pods exist.

Times come from the API server's own timestamps (one-second resolution, the same machine's clock):
NodeClaims' creation, Nodes' Ready transition, pods' Ready transition, each measured from the first create.
Beside it, Karpenter's kwok performance suite (sigs.k8s.io/karpenter v1.15.0,
test/suites/performance/basic_test.go): 1,000 pods of two Deployments (900m/3100Mi and 3500m/28Gi), packed
many to a node, all healthy in under 2 minutes. Here each pod needs a whole node, so N pods are N nodes.

Start the target first, under the lock (`flock /tmp/gpu-finops-local.lock gpu-finops local up`); this leaves
it up with the pods and nodes in place (`gpu-finops local down` clears them).
"""

from __future__ import annotations

import argparse
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from benchmarks.twin import cpu_seconds, peak_rss_mib, say
from local.cluster.processes import PORTS
from twin.jobs import RUN_LABEL as LABEL  # the pods of one run

NAMESPACE = "scaleout-bench"
SUITE = (1000, 120.0)  # pods, seconds: Karpenter's kwok performance suite, basic/scaleOut
PROGRESS_EVERY = 15.0  # wall s between progress lines
WORKERS = 6  # create threads, as twin/submit.py's pool


def pod_object(name: str, run: str, hold_s: float, gpus: int) -> dict[str, Any]:
    from gpu_finops.facts.kube_keys import ANNOTATION_GPU_PROFILE, GPU_RESOURCE
    from harness.jobs import GPU_TOLERATION
    from twin.jobs import stage_delays

    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {LABEL: run},
            "annotations": {**stage_delays(f"{hold_s:.0f}s"), ANNOTATION_GPU_PROFILE: "training-stepping"},
        },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "tolerations": [GPU_TOLERATION],
            "containers": [
                {
                    "name": "gpu",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"limits": {GPU_RESOURCE: str(gpus)}, "requests": {GPU_RESOURCE: str(gpus)}},
                }
            ],
        },
    }


def _ts(value: datetime | str | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value.timestamp()


def _ready_at(obj: Any) -> float | None:
    for c in (obj.status.conditions or []) if obj.status else []:
        if c.type == "Ready" and c.status == "True":
            return _ts(c.last_transition_time)
    return None


def observe(kube: Any, run: str, pool: str) -> dict[str, Any]:
    """One look: pods (scheduled, Ready at), the pool's NodeClaims (created at) and Nodes (Ready at)."""
    from gpu_finops.facts.kube_keys import LABEL_NODEPOOL

    # from the API server's watch cache (resource_version "0"): a quorum read of 1,250 objects timed out
    # (504) on the loaded 2-core machine
    pods = kube.core.list_namespaced_pod(
        NAMESPACE, label_selector=f"{LABEL}={run}", resource_version="0"
    ).items
    claims = kube.custom.list_cluster_custom_object(
        "karpenter.sh", "v1", "nodeclaims", label_selector=f"{LABEL_NODEPOOL}={pool}", resource_version="0"
    )["items"]
    nodes = kube.core.list_node(label_selector=f"{LABEL_NODEPOOL}={pool}", resource_version="0").items
    return {
        "pods": len(pods),
        "names": {p.metadata.name for p in pods},
        "scheduled": sum(1 for p in pods if p.spec.node_name),
        "pod_ready": sorted(t for t in (_ready_at(p) for p in pods) if t is not None),
        "pod_nodes": {p.spec.node_name for p in pods if p.spec.node_name},
        "claims": sorted(_ts(c["metadata"]["creationTimestamp"]) or 0.0 for c in claims),
        "node_ready": sorted(t for t in (_ready_at(n) for n in nodes) if t is not None),
    }


def batches(times: list[float], gap: float = 2.0) -> list[int]:
    """NodeClaims per creation batch: creation times (sorted) more than `gap` s apart start a new batch."""
    out: list[int] = []
    for i, t in enumerate(times):
        if i and t - times[i - 1] <= gap:
            out[-1] += 1
        else:
            out.append(1)
    return out


def karpenter_scheduling(metrics: str, before_any_pass: bool = False) -> tuple[int, float, float]:
    """Karpenter's provisioner: its scheduling passes and their seconds in all
    (karpenter_scheduler_scheduling_duration_seconds), and the seconds its reconciles took in all, the
    NodeClaims' creation included (controller_runtime_reconcile_time_seconds{controller="provisioner"}), from
    its /metrics text. Karpenter makes the histogram at its first pass: `before_any_pass` reads its absence as
    no pass yet, where otherwise it is an error."""
    from prometheus_client.parser import text_string_to_metric_families

    got: dict[str, float] = {}
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            if (
                family.name == "karpenter_scheduler_scheduling_duration_seconds"
                and sample.labels.get("controller") == "provisioner"
                and sample.name.endswith(("_sum", "_count"))
            ):
                got[sample.name.rsplit("_", 1)[1]] = sample.value
            if (
                family.name == "controller_runtime_reconcile_time_seconds"
                and sample.name.endswith("_sum")
                and (sample.labels.get("controller") == "provisioner")
            ):
                got["reconcile"] = sample.value
    if before_any_pass:
        got.setdefault("count", 0)
        got.setdefault("sum", 0.0)
    missing = {"count", "sum", "reconcile"} - set(got)
    if missing:
        raise ValueError(f"Karpenter's /metrics lacks the provisioner's {sorted(missing)}")
    return int(got["count"]), got["sum"], got["reconcile"]


def provisioner(before_any_pass: bool = False) -> tuple[int, float, float]:
    """karpenter_scheduling() of the local target's Karpenter now."""
    url = f"http://127.0.0.1:{PORTS['karpenter-metrics']}/metrics"
    with urllib.request.urlopen(url, timeout=30) as answer:
        return karpenter_scheduling(answer.read().decode(), before_any_pass)


def _line(t0: float, o: dict[str, Any]) -> str:
    return (f"  {time.time() - t0:6.0f} s: {o['pods']} pods, {o['scheduled']} bound, {len(o['pod_ready'])} Ready; "
            f"{len(o['claims'])} NodeClaims, {len(o['node_ready'])} Nodes Ready")  # fmt: skip


def _at(times: list[float], k: int, t0: float) -> str:
    if k < 1:
        return "none"
    return f"{times[k - 1] - t0:.0f} s" if len(times) >= k else f"not reached ({len(times)})"


def main(argv: list[str]) -> None:
    from gpu_finops.facts.config import Tenant
    from infra.objects.kueue import SHIPPED
    from local.cluster.lifecycle import LocalCluster
    from twin import prepare
    from twin.fleet import Fleet

    p = argparse.ArgumentParser(prog="python -m benchmarks scaleout")
    p.add_argument("--pods", type=int, default=1250, help="8-GPU pods, one node each (1,250 = 10,000 GPUs)")
    p.add_argument("--hold", type=float, default=1800.0, help="wall s each pod holds its node once Running")
    p.add_argument("--timeout", type=float, default=1800.0, help="wall s to wait for every pod Ready")
    args = p.parse_args(argv)
    cluster = LocalCluster()
    kube = cluster.kube()
    n = args.pods
    fleet = Fleet(
        "g6e.48xlarge", 0, 0, 0, n, (Tenant("bench", n * 8),), {"bench": {"bench": SHIPPED}}, "us-east-1a"
    )
    pool = fleet.config().nodepool_name
    prepare.apply_pools(kube, fleet)  # the fleet's NodePool only: any other is deleted
    if kube.core.list_namespace(field_selector=f"metadata.name={NAMESPACE}").items:
        raise SystemExit(
            f"namespace {NAMESPACE} exists: a scale-out ran here before; `gpu-finops local down` first"
        )
    kube.core.create_namespace({"metadata": {"name": NAMESPACE}})
    start = observe(kube, "none", pool)
    if start["claims"] or start["node_ready"]:
        raise SystemExit(f"NodePool {pool} already has {len(start['claims'])} NodeClaims: not from zero; "
                         "`gpu-finops local down` and `local up` first")  # fmt: skip
    run = f"s{int(time.time())}"
    gpus = fleet.gpus_per_node
    say(f"Karpenter scale-out: {n} pending {gpus}-GPU pods (plain pods, no Jobs, no Kueue) on NodePool {pool} "
        f"from zero, each held {args.hold:g} wall s")  # fmt: skip
    cpu0 = cpu_seconds(cluster.run_dir)
    before = provisioner(before_any_pass=True)
    t0 = float(int(time.time()))  # the whole second: the API server's timestamps are truncated to it
    with ThreadPoolExecutor(WORKERS, thread_name_prefix="scaleout") as ex:
        futures = [ex.submit(kube.core.create_namespaced_pod, NAMESPACE, pod_object(f"p-{i:05d}", run, args.hold, gpus),
                             _preload_content=False) for i in range(n)]  # fmt: skip
        shown = t0
        while not all(f.done() for f in futures):
            time.sleep(1)
            if time.time() - shown >= PROGRESS_EVERY:
                try:
                    say(_line(t0, observe(kube, run, pool)))
                except Exception as exc:  # the API server busy: said; the creates go on
                    say(f"  {time.time() - t0:6.0f} s: not observed ({type(exc).__name__}: {str(exc)[:120]})")
                shown = time.time()
        for f in futures:
            f.result()
    created = time.time() - t0
    say(f"  all {n} pods created in {created:.1f} s ({n / created:.1f} pods/s, {WORKERS} threads)")
    o = observe(kube, run, pool)
    # a pod deleted (the taint manager's eviction: below) is never Ready and nothing makes it again: one seen
    # and then no longer listed is gone (one the watch cache has not shown yet is not)
    seen = set(o["names"])
    while len(o["pod_ready"]) + len(seen - o["names"]) < n and time.time() - t0 < args.timeout:
        time.sleep(PROGRESS_EVERY)
        try:
            o = observe(kube, run, pool)
        except Exception as exc:  # the API server busy: said, and the last observation stands
            say(f"  {time.time() - t0:6.0f} s: not observed ({type(exc).__name__}: {str(exc)[:120]})")
            continue
        seen |= o["names"]
        say(_line(t0, o))
    wall = time.time() - t0
    used = cpu_seconds(cluster.run_dir)
    ready, claims, nodes = o["pod_ready"], o["claims"], o["node_ready"]
    m = o["pods"]  # the pods still there (a deleted one is said below)
    say(f"Karpenter scale-out of {n} {gpus}-GPU pods ({n * gpus} GPUs) from zero: {len(ready)} of {m} Ready on "
        f"{len(o['pod_nodes'])} distinct nodes; from the first create: the {m}th NodeClaim {_at(claims, m, t0)}, "
        f"the {m}th Node Ready {_at(nodes, m, t0)}, the {m}th pod Ready {_at(ready, m, t0)}")  # fmt: skip
    k = min(SUITE[0], n)
    say(f"  the {k}th pod Ready at {_at(ready, k, t0)} (Karpenter's kwok suite: {SUITE[0]} packed pods within "
        f"{SUITE[1]:.0f} s); NodeClaims {len(claims)}, Nodes Ready {len(nodes)}; "
        f"{len(nodes) / max(nodes[-1] - t0, 1.0) if nodes else 0:.1f} Nodes Ready a second overall")  # fmt: skip
    if o["pods"] < n:
        evicted = sorted({e.involved_object.name for e in kube.core.list_namespaced_event(NAMESPACE).items
                          if e.reason == "TaintManagerEviction"})  # fmt: skip
        say(f"  {n - o['pods']} of the {n} pods were deleted; TaintManagerEviction events name {len(evicted)}: "
            f"{evicted[:10]} (the local target runs without the taint-eviction controller: any named here "
            "means its controller-manager ran with one)")  # fmt: skip
    sizes = batches(claims)
    say(f"  NodeClaims created in {len(sizes)} batches (2 s apart or more): sizes {sizes[:12]}"
        f"{' ...' if len(sizes) > 12 else ''}, largest {max(sizes) if sizes else 0}")  # fmt: skip
    try:
        passes, seconds, busy = (a - b for a, b in zip(provisioner(), before, strict=True))
        say(f"  Karpenter's provisioner (a singleton): {passes:.0f} scheduling passes, {seconds:.0f} s of simulation "
            f"(mean {seconds / max(passes, 1):.1f} s); its reconciles, NodeClaim creation included, {busy:.0f} s "
            f"in all, beside {wall:.0f} s of scale-out")  # fmt: skip
    except (OSError, ValueError) as exc:
        say(f"  Karpenter's provisioner: its metrics not read ({type(exc).__name__}: {exc})")
    top = sorted(((used[x] - cpu0.get(x, 0.0), x) for x in used), reverse=True)[:6]
    say(f"  CPU during the scale-out ({wall:.0f} s wall, 2 cores): "
        + ", ".join(f"{x} {c:.0f} s ({100 * c / wall:.0f} % of a core)" for c, x in top))  # fmt: skip
    for name, mib in sorted(peak_rss_mib(cluster.run_dir).items(), key=lambda x: -x[1])[:6]:
        say(f"  peak RSS {name:24} {mib:8.0f} MiB")
