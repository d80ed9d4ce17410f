"""Act 4 — time-slicing: one physical GPU becomes four replicas; four Kueue-admitted pods run on it at once,
one GPU UUID, each to success.

Both targets: four one-replica Jobs (nvidia.com/gpu.shared) through one tenant's LocalQueue onto the shared
ResourceFlavor; Karpenter's NodeOverlay tells it one shared node holds four replicas. The devices each pod
got come from the kubelet's pod-resources answer (local: the simulated device plugin's) or, on AWS, from
the UUID the device plugin put in the container's NVIDIA_VISIBLE_DEVICES, which the workload prints.

The claim, clause by clause (assertions/timeslicing.py, one function each):
1. node_advertises_one_gpu_as_n_replicas: one physical GPU, four time-sliced replicas, all allocatable.
2. no_whole_gpu_beside_the_replicas: no whole nvidia.com/gpu beside them.
3. each_pod_admitted_by_kueue_on_the_shared_flavor: four pods, each its own Workload's (one pod each, one
   object), admitted on the shared flavor by the tenant's ClusterQueue before it ran.
4. all_pods_on_that_node: all on that node, while it existed.
5. all_ran_at_once: all four Running at one moment.
6. each_pod_got_one_replica_of_one_uuid: one device each, one GPU UUID, no replica twice.
7. each_ran_to_success: each Succeeded.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime

import pytest

from acts.expect import all_finished, bound_to_a_node, eventually_expect
from acts.jobs import gpu_job
from acts.recorder import WorkloadRecorder
from acts.targets import pod_devices
from assertions.timeslicing import TimeSlicingObs, check_timeslicing
from assertions.verdict import require
from gpu_finops.facts import timeouts
from harness.observe import SHARED_GPU_RESOURCE, node_obs
from harness.waits import WaitTimeout
from infra.objects.kueue import SHARED_FLAVOR

pytestmark = pytest.mark.timeout(timeouts.NODE_READY + timeouts.POD_SUCCEEDED + 300)
SECONDS = 40  # each pod's run: long enough to overlap, short enough to finish inside the act


def test_one_gpu_four_replicas_four_pods_at_once_one_uuid(
    kube, act_target, tenant_namespaces, config, report
):
    tenant = next((t for t in config.tenants if t.shared_gpu_quota >= config.timeslicing_replicas), None)
    if tenant is None:
        pytest.fail(
            f"precondition: no tenant has {config.timeslicing_replicas} replicas of shared_gpu_quota in the "
            "config, so Kueue cannot admit four replicas for one tenant",
            pytrace=False,
        )
    run = uuid.uuid4().hex[:6]
    ns = tenant_namespaces[tenant.name]
    n = config.timeslicing_replicas
    rec = WorkloadRecorder(
        kube, {tenant.name: ns}, devices=lambda ns_, pod, node: pod_devices(act_target, kube, ns_, pod, node)
    )
    with report.phase(f"{n} one-replica jobs through {tenant.name}'s queue"):
        for i in range(n):
            # A pod disrupted before it ran (the taint-eviction controller can still see a new node's
            # karpenter.sh/unregistered taint when the scheduler binds to it) is replaced, not a failure.
            job = gpu_job(act_target, f"ts-{run}-{i}", ns, tenant.name, run, seconds=SECONDS,
                          resource=SHARED_GPU_RESOURCE, survives_eviction=True)  # fmt: skip
            if not act_target.simulated:
                job["spec"]["template"]["spec"]["containers"][0]["command"] = [
                    "/bin/sh",
                    "-c",
                    f'echo "visible devices: $NVIDIA_VISIBLE_DEVICES" && /cuda-samples/vectorAdd && sleep {SECONDS}',
                ]
            kube.batch.create_namespaced_job(ns, job)
    with report.phase("a shared node comes up and runs them"):
        first = eventually_expect(
            rec.observe, bound_to_a_node, timeout=timeouts.NODE_READY + timeouts.POD_RUNNING, interval=2
        )
        node_name = next(p.node for w in first for p in w.pods if p.node)
    seen = {"node": node_obs(kube, node_name)}

    def observe() -> list:
        ws = rec.observe()
        with contextlib.suppress(Exception):  # the node, as last seen: Karpenter removes it once empty
            seen["node"] = node_obs(kube, node_name)
        return ws

    # on a timeout the checker says what was seen and what is missing
    with report.phase("all four run, together, to success"), contextlib.suppress(WaitTimeout):
        eventually_expect(observe, all_finished(n), timeout=timeouts.TIMESLICED_RUN + SECONDS, interval=1)
    # each Job's pod, but one the platform ended before it ran: its Job replaced it, and the evidence names it
    pods = tuple(p for w in rec.workloads() for p in w.pods if not p.ended_before_it_ran)
    replaced = tuple(p for w in rec.workloads() for p in w.pods if p.ended_before_it_ran)
    for p in pods:
        report.pod_ran(f"pod {p.name} {list(p.devices)}", p.running)
    obs = TimeSlicingObs(
        node=seen["node"],
        pods=pods,
        workloads=tuple(rec.workloads()),
        replicas=n,
        observed_at=datetime.now(UTC),
        flavor=SHARED_FLAVOR,
        replaced=replaced,
        nodepool=config.shared_nodepool_name,
        tenant=tenant.name,
    )
    require(report.record(check_timeslicing(obs)))
