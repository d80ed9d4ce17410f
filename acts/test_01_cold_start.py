"""Act 1 — cold start: from zero GPU nodes, Karpenter brings a spot GPU node and the GPU job succeeds on it.

The claim, clause by clause (assertions/cold_start.py, one function each):
1. no_gpu_node_before_the_act: no GPU node existed when the act began.
2. node_is_new_and_launched_by_our_nodeclaim: the node is new, made by a NodeClaim of our NodePool created
   after the act began, which Launched before the node was Ready.
3. node_is_spot_with_a_gpu: capacity-type spot, at least one allocatable GPU.
4. node_became_ready: it became Ready, after it was created.
5. pod_ran_on_that_node_after_it_was_ready: the job's pod ran on that node, once it was Ready.
6. pod_succeeded_doing_gpu_work: the pod Succeeded (exit code 0 and finish time observed), printing the
   marker only real GPU work prints.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from acts.expect import eventually_expect, no_gpu_nodes, one_finished
from acts.jobs import gpu_job
from acts.recorder import PodRecorder
from acts.targets import pod_devices
from assertions.cold_start import ColdStartObs, check_cold_start
from assertions.verdict import require
from gpu_finops.facts import timeouts
from harness.observe import gpu_node_names, node_obs

pytestmark = pytest.mark.timeout(timeouts.POD_SUCCEEDED + timeouts.NODE_READY)


def test_cold_start(kube, act_target, tenant_namespaces, config, report):
    tenant = config.tenants[0].name
    ns = tenant_namespaces[tenant]
    run = uuid.uuid4().hex[:6]

    with report.phase("precondition: no GPU nodes"):
        # Nodes left by an earlier act are consolidated away by Karpenter (WhenEmpty); wait that out.
        at_start = eventually_expect(lambda: gpu_node_names(kube), no_gpu_nodes, timeout=timeouts.NODE_READY)
    began = datetime.now(UTC)
    with report.phase("submit and wait for success"):
        kube.batch.create_namespaced_job(ns, gpu_job(act_target, f"cold-{run}", ns, tenant, run, seconds=20))
        # watched throughout, so the Running start is the one seen (kwok restates it at completion)
        watch = PodRecorder(
            kube,
            ns,
            f"cold-{run}",
            devices=lambda ns_, pod, node: pod_devices(act_target, kube, ns_, pod, node),
        )
        pods = eventually_expect(watch.observe, one_finished, timeout=timeouts.POD_SUCCEEDED, interval=1)
    pod = next(p for p in pods if p.phase in ("Succeeded", "Failed"))
    output = None
    if act_target.success_marker and pod.phase == "Succeeded":
        output = kube.core.read_namespaced_pod_log(pod.name, ns)
    pod = pod.__class__(**{**pod.__dict__, "output": output})
    node = node_obs(kube, pod.node) if pod.node else None
    if node:
        report.node_seen(node.name, node.created)
    report.pod_ran(f"pod {pod.name}", pod.running)
    marker = act_target.success_marker
    obs = ColdStartObs(
        act_started=began,
        gpu_nodes_at_start=tuple(at_start),
        nodepool=config.nodepool_name,
        node=node,
        pod=pod,
        success_marker=marker,
        observed_at=datetime.now(UTC),  # after every read above
    )
    require(report.record(check_cold_start(obs)))
