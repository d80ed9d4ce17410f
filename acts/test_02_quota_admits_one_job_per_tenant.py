"""Act 2 — quota admission: of twelve jobs, exactly two admitted, both running at once, one per tenant."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from acts.jobs import gpu_job
from acts.recorder import WorkloadRecorder
from acts.targets import pod_devices
from assertions.admission import AdmissionObs, check_admission
from assertions.verdict import require
from facts import timeouts
from harness.waits import consistently, eventually

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

    with report.phase("submit twelve jobs"):
        for i in range(JOBS):
            tenant = tenants[i % len(tenants)]
            ns = tenant_namespaces[tenant]
            kube.batch.create_namespaced_job(
                ns, gpu_job(act_target, f"adm-{run}-{i:02d}", ns, tenant, run, seconds=180)
            )
    with report.phase("wait for admitted pods to run"):
        eventually(
            rec.observe,
            lambda ws: (
                len(ws) == JOBS
                and sum(1 for w in ws if any(p.running and p.devices for p in w.pods)) >= len(tenants)
            ),
            timeout=timeouts.NODE_READY + timeouts.ADMISSION,
            interval=2,
            what=f"{JOBS} workloads, {len(tenants)} of them with a Running pod and its GPU device",
        )
    with report.phase("the rest stay queued"):
        # Observed again and again: a claim about a moment is checked over a window.
        consistently(
            rec.observe,
            lambda ws: len(ws) == JOBS,
            duration=timeouts.QUEUED_STEADY,
            interval=2,
            what="twelve workloads visible",
        )
    obs = AdmissionObs(
        workloads=tuple(rec.workloads()),
        tenants=tuple(tenants),
        expected_total=JOBS,
        expected_admitted=len(tenants),
        observed_at=datetime.now(UTC),
    )
    for w in obs.workloads:
        for p in w.pods:
            report.pod_ran(f"pod {p.name}", p.running)
    require(report.record(check_admission(obs)))
