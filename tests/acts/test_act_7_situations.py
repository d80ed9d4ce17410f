"""Act 7's situations, as the cluster will show them, through the real engine: each is diagnosed with the
cause the act expects, and with placement checked before allocation the two-causes pod is not. This keeps
the act's expectations and the engine in step without a cluster (the act itself proves it live)."""

from __future__ import annotations

import dataclasses

from acts.jobs import GPU_TOLERATION
from assertions.diagnosis import DiagnosisActObs, DiagnosisObs, Situation, check_diagnosis
from gpu_finops.diagnose import ORDER, Cluster, diagnose_all
from gpu_finops.diagnose.kube_observer import pod_facts
from gpu_finops.diagnose.model import (
    GpuStats,
    Holder,
    NodeFacts,
    PodFacts,
    Taint,
    WorkloadFacts,
)
from gpu_finops.facts import dcgm
from gpu_finops.facts.conditions import Condition
from local.sim.profiles import DATA_STARVED, RESIDENT_MODEL, UNHELD, profile_values

GPU, SHARED = "nvidia.com/gpu", "nvidia.com/gpu.shared"
GPU_TAINT = Taint("nvidia.com/gpu", "NoSchedule", "true")
ACT_TAINT = Taint("gpu-finops.io/act7-maintenance", "NoSchedule", "true")


def stats(node: str, uuid: str, holder: str | None, profile: str) -> GpuStats:
    v = profile_values(profile)
    return GpuStats(
        node, "0", uuid, holder, v[dcgm.SM_ACTIVE], v[dcgm.SM_OCCUPANCY], v[dcgm.FB_USED], v[dcgm.FB_FREE],
        v[dcgm.PCIE_TX_BYTES], v[dcgm.PCIE_RX_BYTES], 0.0, 0.0, v[dcgm.POWER_USAGE],
    )  # fmt: skip


def node(name: str, pool: str, resource: str, count: int, *extra: Taint) -> NodeFacts:
    labels = {
        "karpenter.sh/nodepool": pool,
        "kubernetes.io/hostname": f"claim-{name}",
        "nvidia.com/gpu.replicas": "4" if resource == SHARED else "1",
    }
    return NodeFacts(name, labels, (GPU_TAINT, *extra), {resource: count})


def pod(
    name: str, resource: str, *, tolerate: bool = True, node_name: str | None = None, affinity=None
) -> PodFacts:
    spec = {
        "containers": [{"name": "gpu", "resources": {"limits": {resource: "1"}}}],
        "tolerations": [GPU_TOLERATION] if tolerate else [],
        "nodeName": node_name,
    }
    if affinity:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": affinity}
            }
        }
    return pod_facts(
        {"metadata": {"namespace": "a", "name": name}, "spec": spec, "status": {"phase": "Pending"}}
    )


def term(key: str, value: str) -> list[dict]:
    return [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]


SERVERS = ["a/server-0", "a/server-1", "a/server-2"]
SERVER_HOLDERS = tuple(Holder("a", s.split("/")[1], "shared", {SHARED: 1}) for s in SERVERS)
# the shared card as dcgm-exporter reports it with KUBERNETES_VIRTUAL_GPUS (docs/infra.md, "Time-sliced
# attribution"): each server's FB_USED is its own share of the card's, every other field the card's
SERVER_STATS = tuple(
    dataclasses.replace(r, fb_used_mib=r.fb_used_mib / len(SERVERS))
    for r in (stats("shared", "GPU-s", s, RESIDENT_MODEL) for s in SERVERS)
)
WL = WorkloadFacts(
    "b", "job-second", "team-b", {"QuotaReserved": Condition("QuotaReserved", "False", "Pending", "insufficient unused quota")},
    job_suspended=True, pod_template=pod("second", GPU),
)  # fmt: skip


def first_step() -> tuple[list[PodFacts], Cluster]:
    pods = [
        pod("waits-memory", SHARED, node_name="shared"),
        pod("waits-allocation", SHARED, affinity=term("kubernetes.io/hostname", "claim-shared")),
        pod("waits-two-causes", SHARED, tolerate=False),
        pod("waits-application", GPU, affinity=term("karpenter.sh/nodepool", "gpu-spot")),
    ]
    cluster = Cluster(
        nodes=(node("n-a", "gpu-spot", GPU, 1), node("n-b", "gpu-spot", GPU, 1), node("shared", "gpu-shared", SHARED, 4)),
        holders=(
            Holder("a", "trainer-a", "n-a", {GPU: 1}),
            Holder("b", "trainer-b", "n-b", {GPU: 1}),
            *SERVER_HOLDERS,
            Holder("a", "waits-memory", "shared", {SHARED: 1}),
        ),
        workloads=(WL,),
        stats=(
            stats("n-a", "GPU-a", None, UNHELD),
            stats("n-a", "GPU-a", "a/trainer-a", DATA_STARVED),
            stats("n-b", "GPU-b", "b/trainer-b", DATA_STARVED),
            stats("shared", "GPU-s", None, UNHELD),
            *SERVER_STATS,
        ),
    )  # fmt: skip
    return pods, cluster


def second_step() -> tuple[list[PodFacts], Cluster]:
    pods, c = first_step()
    affinity = [
        {"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-spot"]}]}
    ]
    pods = [p for p in pods if p.name != "waits-application"] + [
        pod("waits-placement", GPU, affinity=affinity)
    ]
    cluster = Cluster(
        nodes=(c.nodes[0], node("n-b", "gpu-spot", GPU, 1, ACT_TAINT), c.nodes[2]),
        holders=tuple(h for h in c.holders if h.name != "trainer-b"),
        workloads=(),
        stats=c.stats,  # trainer-b's series are still in the window
    )
    return pods, cluster


SITUATIONS = (
    Situation("b/job-second", "admission", ("workload:b/job-second", "QuotaReserved=False", "suspended")),
    Situation("a/waits-memory", "memory", ("vram-full:shared/GPU-s",)),
    Situation("a/waits-allocation", "allocation", tuple(f"holder:{s}" for s in SERVERS)),
    Situation("a/waits-two-causes", "allocation", tuple(f"holder:{s}" for s in SERVERS), also_holds=("placement",)),
    Situation("a/waits-application", "application", ("starved:a/trainer-a", "starved:b/trainer-b")),
    Situation("a/waits-placement", "placement", ("ruled-out:n-b:taint", "only-match:n-a")),
)  # fmt: skip


def act_obs(order: tuple[str, ...]) -> DiagnosisActObs:
    first = {d.target: d for d in diagnose_all(*first_step(), order=order)}
    second = {d.target: d for d in diagnose_all(*second_step(), order=order)}
    diagnosed = {**first, "a/waits-placement": second["a/waits-placement"]}
    return DiagnosisActObs(SITUATIONS, tuple(DiagnosisObs.from_dict(d.to_dict()) for d in diagnosed.values()))


def test_every_situation_the_act_builds_is_diagnosed_as_the_act_expects():
    v = check_diagnosis(act_obs(ORDER))
    assert v.holds, v.observed + " | " + str(v.evidence.get("failures", v.to_dict()))


def test_placement_before_allocation_names_placement_for_the_two_causes_pod():
    v = check_diagnosis(act_obs(("admission", "placement", "allocation", "memory", "application")))
    assert not v.holds
    assert "a/waits-two-causes: first cause placement, expected allocation" in str(v.to_dict())
