"""Act 4 — time-slicing: one physical GPU becomes four replicas; four pods run on it, one GPU UUID."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from acts.jobs import gpu_job
from assertions.observed import PodObs
from assertions.timeslicing import TimeSlicingObs, check_timeslicing
from assertions.verdict import require
from facts import timeouts
from harness.observe import job_pods, node_obs
from harness.waits import eventually

pytestmark = pytest.mark.timeout(timeouts.NODE_READY + timeouts.POD_RUNNING + 300)


def test_one_gpu_four_replicas_four_pods_one_uuid(kube, act_target, tenant_namespaces, config, report):
    if act_target.simulated:
        pytest.skip(
            "time-slicing is the NVIDIA device plugin's work on a real GPU; kwok nodes have no device plugin "
            "and no GPU UUID to share, so the local target cannot prove it (not passed)"
        )
    run = uuid.uuid4().hex[:6]
    tenant = config.tenants[0].name
    ns = tenant_namespaces[tenant]
    with report.phase("four one-replica pods"):
        for i in range(config.timeslicing_replicas):
            job = gpu_job(act_target, f"ts-{run}-{i}", ns, tenant, run, seconds=120)
            job["spec"]["template"]["spec"]["containers"][0]["command"] = [
                "/bin/sh",
                "-c",
                "nvidia-smi -L | grep -o 'UUID: GPU-[0-9a-f-]*' | head -1; sleep 120",
            ]
            job["spec"]["template"]["spec"]["affinity"] = {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"gpu-finops.io/act-run": run}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            }
            kube.batch.create_namespaced_job(ns, job)
        pods = eventually(
            lambda: [
                p for i in range(config.timeslicing_replicas) for p in job_pods(kube, ns, f"ts-{run}-{i}")
            ],
            lambda ps: len(ps) == config.timeslicing_replicas and all(p.running for p in ps),
            timeout=timeouts.NODE_READY + timeouts.POD_RUNNING,
            interval=3,
            what="four pods Running",
        )
    uuids = []
    for p in pods:
        log = kube.core.read_namespaced_pod_log(p.name, ns)
        found = next((w.removeprefix("GPU-") for w in log.split() if w.startswith("GPU-")), None)
        uuids.append(PodObs(**{**p.__dict__, "gpu_uuid": f"GPU-{found}" if found else None}))
    node = node_obs(kube, pods[0].node)
    require(
        report.record(
            check_timeslicing(
                TimeSlicingObs(node, tuple(uuids), config.timeslicing_replicas, datetime.now(UTC))
            )
        )
    )
