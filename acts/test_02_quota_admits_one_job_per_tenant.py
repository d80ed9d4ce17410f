"""Act 2 — quota admission: of twelve jobs, exactly two admitted, both running at once, one per tenant.

The claim, clause by clause (assertions/admission.py, one function each):
1. every_job_has_one_workload: twelve Workloads, one object (uid) each.
2. no_workload_finished_in_the_window: nothing finished, so the admissions are one steady state.
3. exactly_n_admitted: exactly two admitted over the whole window.
4. one_admitted_per_cluster_queue: one per tenant, each charged to the ClusterQueue of the tenant that submitted it.
5. pods_start_only_after_admission: no pod ran before Kueue admitted its Workload.
6. admitted_pods_ran_healthy: each admitted Workload has a pod that ran without crashing.
7. admitted_ran_at_once: the admitted ones ran at one same moment (runs that really happened, before the last look).
8. admitted_ran_on_different_cards: on different physical GPUs, no two sharing one.
9. the_rest_never_held_quota_and_stayed_suspended: the other ten never held quota, their Jobs suspended, no pods.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from acts.expect import all_visible, consistently_expect, eventually_expect, workloads_with_running_devices
from acts.jobs import gpu_job
from acts.recorder import WorkloadRecorder
from acts.targets import pod_devices
from assertions.admission import AdmissionObs, check_admission
from assertions.verdict import require
from gpu_finops.facts import timeouts

pytestmark = pytest.mark.timeout(timeouts.NODE_READY + timeouts.ADMISSION + 300)
JOBS = 12


def test_two_of_twelve_admitted_one_per_tenant_running_at_once(
    kube, act_target, tenant_namespaces, config, report
):
    run = uuid.uuid4().hex[:6]
    tenants = [t.name for t in config.tenants]
    rec = WorkloadRecorder(
        kube, tenant_namespaces, devices=lambda ns, pod, node: pod_devices(act_target, kube, ns, pod, node)
    )

    submitted: dict[str, str] = {}  # Job -> the tenant whose queue it went through
    with report.phase("submit twelve jobs"):
        for i in range(JOBS):
            tenant = tenants[i % len(tenants)]
            ns = tenant_namespaces[tenant]
            submitted[f"adm-{run}-{i:02d}"] = tenant
            # A pod the platform ends before it ran (the taint-eviction controller can still see a new
            # node's karpenter.sh/unregistered taint when the scheduler binds to it) is replaced by the Job,
            # not a failure that hands the quota on; the checker names it.
            kube.batch.create_namespaced_job(
                ns,
                gpu_job(
                    act_target, f"adm-{run}-{i:02d}", ns, tenant, run, seconds=180, survives_eviction=True
                ),
            )
    with report.phase("wait for admitted pods to run"):
        eventually_expect(
            rec.observe,
            workloads_with_running_devices(JOBS, len(tenants)),
            timeout=timeouts.NODE_READY + timeouts.ADMISSION,
            interval=2,
        )
    with report.phase("the rest stay queued"):
        # Observed again and again: a claim about a moment is checked over a window.
        consistently_expect(rec.observe, all_visible(JOBS), duration=timeouts.QUEUED_STEADY, interval=2)
    obs = AdmissionObs(
        workloads=tuple(rec.workloads()),
        tenants=tuple(tenants),
        expected_total=JOBS,
        expected_admitted=len(tenants),
        observed_at=datetime.now(UTC),
        submitted=submitted,
    )
    for w in obs.workloads:
        for p in w.pods:
            report.pod_ran(f"pod {p.name}", p.running)
    require(report.record(check_admission(obs)))
