"""Act 3 — preemption: a high-priority job evicts a low one; the victim is requeued, not killed."""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime

import pytest

from acts.jobs import gpu_job
from acts.recorder import WorkloadRecorder
from assertions.preemption import PreemptionObs, check_preemption
from assertions.verdict import require
from facts import timeouts
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
            ns, gpu_job(act_target, low, ns, tenant, run, seconds=600, priority="low")
        )
        eventually(
            lambda: (rec.observe(), rec.by_job(low))[1],
            lambda w: w is not None and any(p.running for p in w.pods),
            timeout=timeouts.NODE_READY + timeouts.ADMISSION,
            interval=2,
            what=f"{low} admitted and Running",
        )
    submitted = datetime.now(UTC)
    with report.phase("submit the high-priority job; observe the eviction window"):
        kube.batch.create_namespaced_job(
            ns, gpu_job(act_target, high, ns, tenant, run, seconds=120, priority="high")
        )

        def done() -> bool:
            rec.observe()
            v, h = rec.by_job(low), rec.by_job(high)
            requeued = v is not None and any(
                s.job_suspended and not s.has_admission for s in v.snapshots if s.at >= submitted
            )
            return requeued and h is not None and any(p.running for p in h.pods)

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
    )
    require(report.record(check_preemption(obs)))
