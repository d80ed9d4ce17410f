"""Act 5 — spot interruption: the warning reaches Karpenter through its interruption queue; Karpenter cordons
within the notice, evicts the workload gracefully, and the workload runs again on a replacement spot node.

AWS: an FIS experiment aimed at the workload's own instance. Local: the same EventBridge event put on the
queue (SQS on the local moto server), read by Karpenter's real AWS interruption controller; from there
everything is the real controllers' work. What only AWS shows (FIS itself, EC2 reclaiming the instance) is
named in the verdict's evidence (`delivery`).

The claim, clause by clause (assertions/interruption.py, one function each):
1. warning_was_delivered: the warning was delivered (FIS completed; locally the SQS put delivered).
2. karpenter_saw_the_interruption: SpotInterrupted and TerminatingOnInterruption about this node or its
   NodeClaim, after the warning.
3. interrupted_node_was_spot_and_up_at_the_warning: the node warned was a spot node, up at the warning.
4. node_cordoned_within_the_notice: karpenter.sh/disrupted on the node within the two-minute notice.
5. nodeclaim_of_the_node_deleted: the node's NodeClaim, of our NodePool, deleted after the warning.
6. workload_evicted_through_the_eviction_api: the pods on it evicted through the eviction API.
7. replacement_is_a_new_spot_node_of_ours: a new node (another name, uid and NodeClaim), it and its NodeClaim
   created after the warning, spot, with a GPU, of our NodePool, Ready.
8. workload_ran_again_on_the_replacement: a pod other than the evicted ones ran on it, without crashing,
   after it was Ready.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime

import pytest

from acts.expect import eventually_expect, running_on_a_node
from acts.interruption_watch import InterruptionWatch
from acts.jobs import gpu_job
from acts.recorder import PodRecorder
from acts.targets import interrupter
from assertions.interruption import NOTICE_SECONDS, InterruptionObs, check_interruption
from assertions.verdict import require
from gpu_finops.facts import timeouts
from harness.observe import events_for, gpu_node_names, node_obs
from harness.waits import WaitTimeout, eventually

pytestmark = pytest.mark.timeout(timeouts.NODE_READY + timeouts.POD_RUNNING + timeouts.REPLACEMENT_NODE + 300)


def test_spot_interruption_cordons_within_the_notice_evicts_and_the_workload_runs_again(
    kube, act_target, tenant_namespaces, config, report
):
    run = uuid.uuid4().hex[:6]
    tenant = config.tenants[0].name
    ns = tenant_namespaces[tenant]
    job = f"spot-{run}"
    interrupt = interrupter(act_target, config)
    with report.phase("precondition: the interruption path exists"):
        missing = interrupt.not_ready()
        if missing:
            pytest.fail(f"precondition: {missing}", pytrace=False)
    pods = PodRecorder(kube, ns, job)
    with report.phase("a GPU workload that survives eviction runs on a spot node"):
        kube.batch.create_namespaced_job(
            ns, gpu_job(act_target, job, ns, tenant, run, seconds=900, survives_eviction=True)
        )
        running = eventually_expect(
            pods.observe, running_on_a_node, timeout=timeouts.NODE_READY + timeouts.POD_RUNNING, interval=2
        )
    victim = next(p for p in running if p.running is not None and p.node)
    node = node_obs(kube, victim.node)  # type: ignore[arg-type]
    watch = InterruptionWatch(kube, node, pods, nodes_before=frozenset(gpu_node_names(kube)))
    with report.phase("the warning; Karpenter cordons and drains"):
        delivery = interrupt.interrupt(node)
        # the notice bounds the wait: a node not cordoned within it has already failed the claim
        with contextlib.suppress(WaitTimeout):
            eventually(
                watch.observe,
                lambda w: w.taint_seen_at is not None,
                timeout=NOTICE_SECONDS + 10,
                interval=1,
                what=f"karpenter.sh/disrupted on {node.name}",
            )
    with report.phase("a replacement node; the workload runs again"):
        if watch.taint_seen_at is not None:
            with contextlib.suppress(WaitTimeout):
                eventually(
                    watch.observe,
                    lambda w: w.workload_running_again,
                    timeout=timeouts.REPLACEMENT_NODE,
                    interval=1,
                    what=f"job {job} Running again on a new GPU node",
                )
        delivery = interrupt.finish(delivery, timeout=timeouts.REPLACEMENT_NODE)
    for p in watch.all_pods():
        report.pod_ran(f"pod {p.name} on {p.node}", p.running)
    obs = InterruptionObs(
        warned_at=delivery.sent_at,
        delivery=delivery.how,
        delivery_state=delivery.state,
        delivery_reason=delivery.reason,
        node=watch.last_node or node,
        nodepool=config.nodepool_name,
        events=tuple(events_for(kube, None, {node.name, node.nodeclaim or ""})),
        taint_seen_at=watch.taint_seen_at,
        nodeclaim_deleted_at=watch.nodeclaim_deleted_at,
        pods=watch.all_pods(),
        replacement=watch.replacement,
        observed_at=datetime.now(UTC),  # after every read above (keyword arguments are read in order)
    )
    require(report.record(check_interruption(obs)))
