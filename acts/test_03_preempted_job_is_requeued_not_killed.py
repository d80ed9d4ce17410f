"""Act 3 — preemption: a high-priority job evicts a low one; the victim is requeued, not killed.

The claim, clause by clause (assertions/preemption.py, one function each):
1. preemptor_outranks_victim: the high job's spec.priority is above the low one's.
2. victim_is_one_workload_throughout: the victim is one Workload (one uid) throughout, not re-created.
3. victim_was_admitted_before_the_preemptor_came: the queue was full when the high job arrived.
4. victim_history_shows_eviction_then_requeue: after the high job came, Evicted(Preempted), then suspended,
   no admission, QuotaReserved False.
5. victim_preempted_for_the_policy_reason: Preempted for the reason the config's policy implies, to make room
   for this preemptor (its UID in Kueue's message), in the tenant's own ClusterQueue.
6. victim_never_finished: the victim did not finish (fail) instead.
7. preemptor_admitted_only_after_the_eviction: the quota was not free before the eviction.
8. preemptor_admitted_and_running: the high job was admitted and its pod ran after that.
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime

import pytest

from acts.expect import admitted_and_running, has_a_running_pod
from acts.jobs import gpu_job
from acts.recorder import WorkloadRecorder
from assertions.observed import WorkloadObs
from assertions.preemption import PreemptionObs, check_preemption
from assertions.verdict import require
from gpu_finops.facts import timeouts
from harness.waits import WaitTimeout, eventually

pytestmark = pytest.mark.timeout(timeouts.NODE_READY + timeouts.PREEMPTION + 300)


def test_high_priority_preempts_low_which_is_requeued(kube, act_target, tenant_namespaces, config, report):
    run = uuid.uuid4().hex[:6]
    tenant = config.tenants[0].name
    ns = tenant_namespaces[tenant]
    rec = WorkloadRecorder(kube, {tenant: ns})
    low, high = f"low-{run}", f"high-{run}"

    with report.phase("fill the queue with a low-priority job"):
        kube.batch.create_namespaced_job(
            ns, gpu_job(act_target, low, ns, tenant, run, seconds=600, priority="low", survives_eviction=True)
        )

        def observe_low() -> WorkloadObs | None:
            rec.observe()
            return rec.by_job(low)

        eventually(
            observe_low,
            admitted_and_running,
            timeout=timeouts.NODE_READY + timeouts.ADMISSION,
            interval=2,
            what=f"{low} admitted and Running",
        )
    submitted = datetime.now(UTC)
    with report.phase("submit the high-priority job; observe the eviction window"):
        kube.batch.create_namespaced_job(
            ns,
            gpu_job(act_target, high, ns, tenant, run, seconds=120, priority="high", survives_eviction=True),
        )

        def done() -> bool:
            rec.observe()
            v, h = rec.by_job(low), rec.by_job(high)
            requeued = v is not None and any(
                s.job_suspended and not s.has_admission for s in v.snapshots if s.at >= submitted
            )
            return requeued and has_a_running_pod(h)

        with contextlib.suppress(WaitTimeout):  # the checker names what did not happen
            eventually(
                done, bool, timeout=timeouts.PREEMPTION, interval=1, what=f"{low} requeued and {high} Running"
            )
    victim, preemptor = rec.by_job(low), rec.by_job(high)
    if victim is None or preemptor is None:
        pytest.fail(f"Kueue made no Workload for {low if victim is None else high}", pytrace=False)
    obs = PreemptionObs(
        victim=victim,
        preemptor=preemptor,
        preemptor_submitted=submitted,
        # both jobs are the same tenant's: the config's withinClusterQueue policy decides
        expected_reason="InClusterQueue" if victim.tenant == preemptor.tenant else "InCohortReclamation",
        observed_at=datetime.now(UTC),  # after every read above
    )
    require(report.record(check_preemption(obs)))
