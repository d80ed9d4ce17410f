"""Kueue on the local target admits a workload on the MPS flavor only when its pods tolerate the MPS pool's
taint: team-b (no time-sliced quota, two MPS clients) asks for one `nvidia.com/gpu.shared` without the
toleration and waits, its message naming the untolerated taint on gpu-mps, while its client that tolerates the
taint is admitted on gpu-mps. With the taint among the flavor's own tolerations, Kueue would add it to any pod
and admit the first ask on gpu-mps: a time-sliced ask turned into an MPS client."""

from __future__ import annotations

import uuid

import pytest

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(600)]


def test_a_shared_gpu_ask_without_the_mps_toleration_waits_while_a_client_that_tolerates_it_runs_on_mps(
    local_cluster,
):
    from acts.jobs import gpu_job
    from acts.namespaces import cleanup_namespaces, local_queues_active
    from acts.targets import local_target
    from gpu_finops.facts.kube_keys import KUEUE_API, SHARED_GPU_RESOURCE
    from harness.observe import workloads
    from harness.waits import eventually
    from infra.objects.kueue import MPS_FLAVOR

    kube, config, target = local_cluster.kube(), local_cluster.config, local_target()
    (tenant,) = [t for t in config.tenants if t.shared_gpu_quota == 0 and t.mps_quota > 0]
    run = uuid.uuid4().hex[:6]
    ns = f"mps-flavor-{run}"
    kube.apply(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": tenant.name, "namespace": ns},
             "spec": {"clusterQueue": tenant.name}},
        ]
    )  # fmt: skip
    try:
        local_queues_active(kube, {ns: tenant.name})
        ask = dict(resource=SHARED_GPU_RESOURCE, seconds=5)
        plain = gpu_job(target, f"plain-{run}", ns, tenant.name, run, **ask)
        client = gpu_job(
            target, f"client-{run}", ns, tenant.name, run, pool=config.mps_nodepool_name, mps=True, **ask
        )
        for job in (plain, client):
            kube.batch.create_namespaced_job(ns, job)

        def admission(w: dict) -> dict:
            """A Workload as the wait reports it: its quota reservation, flavors, and the pending message."""
            status = w.get("status") or {}
            quota = next((c for c in status.get("conditions") or [] if c["type"] == "QuotaReserved"), {})
            flavors = {f for ps in (status.get("admission") or {}).get("podSetAssignments") or []
                       for f in (ps.get("flavors") or {}).values()}  # fmt: skip
            return {"reserved": quota.get("status") == "True", "admitted": "admission" in status,
                    "flavors": sorted(flavors), "message": quota.get("message", "")}  # fmt: skip

        def observe() -> dict[str, dict]:
            return {w["metadata"]["ownerReferences"][0]["name"]: admission(w) for w in workloads(kube, ns)}

        seen = eventually(
            observe,
            lambda s: (
                s.get(f"client-{run}", {}).get("reserved", False)
                and "untolerated" in s.get(f"plain-{run}", {}).get("message", "")
            ),
            timeout=120,
            interval=1,
            what=f"{tenant.name}'s MPS client admitted and its plain shared ask refused the MPS flavor",
        )
        assert seen[f"client-{run}"]["flavors"] == [MPS_FLAVOR], seen
        refused = seen[f"plain-{run}"]
        assert not refused["reserved"] and not refused["admitted"], seen
        # Kueue's own words for the MPS flavor: the pod set does not tolerate the pool's taint
        assert refused["message"].endswith(
            f"untolerated taint {{gpu-finops.io/mps true NoSchedule <nil>}} in flavor {MPS_FLAVOR}"
        ), seen
    finally:
        cleanup_namespaces(kube, [ns])
