"""The observers: kubernetes-client objects (V1Pod, V1Node, EventsV1Event, Kueue Workload dicts) into
the diagnosis's dataclasses; DCGM rows from Prometheus, joined by the node (`hostname` or `Hostname`) + gpu + UUID + pod labels."""

from __future__ import annotations

import shutil

import pytest
from kubernetes import client as k

from gpu_finops.clients.promql import Sample
from gpu_finops.diagnose.engine import diagnose_all, diagnose_pod
from gpu_finops.diagnose.kube_observer import (
    KubeObserver,
    PodGone,
    holders,
    latest_failed_scheduling,
    node_facts,
    pod_facts,
)
from gpu_finops.diagnose.model import Cluster, Requirement, SelectorTerm, Taint, Toleration
from gpu_finops.diagnose.prom_observer import query_for, read_gpu_stats, read_or_reason
from gpu_finops.facts import dcgm
from local.sim.dcgm_sim import SimGpu
from local.sim.profiles import profile_values
from tests.gpu_finops.diagnose import kube_shapes as ks


def test_node_facts_from_a_v1node():
    n = node_facts(
        ks.gpu_node(
            "gpu-a",
            4,
            labels={"nvidia.com/gpu.replicas": "4"},
            taints=[("nvidia.com/gpu", "present", "NoSchedule")],
            unschedulable=True,
        )
    )
    assert n.allocatable == {"nvidia.com/gpu": 4}
    assert n.taints == (Taint("nvidia.com/gpu", "NoSchedule", "present"),)
    assert n.unschedulable and n.ready and n.replicas_per_gpu == 4
    assert not node_facts(ks.gpu_node("gpu-b", ready=False)).ready


def test_pod_facts_read_every_constraint_from_a_v1pod():
    affinity = k.V1Affinity(
        node_affinity=k.V1NodeAffinity(
            required_during_scheduling_ignored_during_execution=k.V1NodeSelector(
                node_selector_terms=[
                    k.V1NodeSelectorTerm(
                        match_expressions=[
                            k.V1NodeSelectorRequirement(key="pool", operator="In", values=["train"]),
                            k.V1NodeSelectorRequirement(key="gpu-mem", operator="Gt", values=["40"]),
                            k.V1NodeSelectorRequirement(key="spot", operator="DoesNotExist"),
                        ],
                        match_fields=[
                            k.V1NodeSelectorRequirement(key="metadata.name", operator="NotIn", values=["bad"])
                        ],
                    )
                ]
            )
        )
    )
    p = pod_facts(
        ks.pod(
            "train",
            gpus=2,
            node_selector={"zone": "a"},
            affinity=affinity,
            tolerations=[
                k.V1Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule"),
                k.V1Toleration(key="team", value="a"),
            ],
            unschedulable_message="0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
            init_gpus=3,
        ),
        workload="job-train-1a2b3",
    )
    assert p.key == "team-a/train" and p.phase == "Pending" and p.node_name is None
    assert p.gpu_requests == {"nvidia.com/gpu": 3}  # the init container's 3 beat the app's 2
    assert p.node_selector == {"zone": "a"}
    assert p.required_terms == (
        SelectorTerm(
            (
                Requirement("pool", "In", ("train",)),
                Requirement("gpu-mem", "Gt", ("40",)),
                Requirement("spot", "DoesNotExist"),
            ),
            (Requirement("metadata.name", "NotIn", ("bad",)),),
        ),
    )
    assert p.tolerations == (
        Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
        Toleration("team", "Equal", "a", ""),
    )
    assert p.scheduler_message == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    assert p.workload == "job-train-1a2b3"


def test_pod_without_affinity_has_no_required_terms_and_shared_resource_is_read():
    p = pod_facts(ks.pod("s", resource="nvidia.com/gpu.shared"))
    assert p.required_terms is None and p.gpu_requests == {"nvidia.com/gpu.shared": 1}
    assert pod_facts(ks.pod("cpu", gpus=None)).gpu_resource is None


def test_holders_are_bound_non_terminal_gpu_pods():
    pods = [
        ks.pod("run", phase="Running", node="gpu-a"),
        ks.pod("bound-pending", node="gpu-a"),
        ks.pod("done", phase="Succeeded", node="gpu-a"),
        ks.pod("cpu", phase="Running", node="gpu-a", gpus=None),
        ks.pod("unbound"),
    ]
    assert [h.name for h in holders(pods)] == ["run", "bound-pending"]


def test_newest_failed_scheduling_message_wins():
    from datetime import timedelta

    events = [
        ks.failed_scheduling("p", "team-a", "old", ks.T0),
        ks.failed_scheduling("p", "team-a", "new", ks.T0 + timedelta(seconds=30)),
        ks.failed_scheduling("q", "team-a", "other", ks.T0),
    ]
    assert latest_failed_scheduling(events) == {"team-a/p": "new", "team-a/q": "other"}


def situation() -> ks.FakeKube:
    """One card held by a resident model; a pending pod of an admitted Job; a quota-blocked workload."""
    return ks.FakeKube(
        nodes=[ks.gpu_node("gpu-a")],
        pods=[
            ks.pod("llm", phase="Running", node="gpu-a"),
            ks.pod("train-x", job="train", unschedulable_message="0/1 nodes are available"),
            ks.pod("web", phase="Running", node="gpu-a", gpus=None),
        ],
        events=[
            ks.failed_scheduling(
                "train-x", "team-a", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
            )
        ],
        workloads=[
            ks.workload("job-train-aaaaa", "train", admitted=True),
            ks.workload("job-queued-bbbbb", "queued", admitted=False),
        ],
        jobs=[ks.job("train"), ks.job("queued", suspend=True)],
    )


def test_kube_observer_reads_a_whole_situation():
    o = KubeObserver(situation())
    pods, nodes, hs, wls = o.observe("team-a")
    assert [n.name for n in nodes] == ["gpu-a"]
    assert [h.key for h in hs] == ["team-a/llm"]
    train = next(p for p in pods if p.name == "train-x")
    assert train.workload == "job-train-aaaaa"
    assert train.scheduler_message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    queued = next(w for w in wls if w.name == "job-queued-bbbbb")
    assert queued.job_suspended is True and not queued.admitted
    assert queued.conditions["QuotaReserved"].message.startswith("couldn't assign flavors")
    assert queued.pod_template is not None and queued.pod_template.gpu_requests == {"nvidia.com/gpu": 1}
    cluster = Cluster(
        tuple(nodes), tuple(hs), tuple(wls), stats=None, stats_unavailable="Prometheus at X unreachable"
    )
    out = diagnose_all(pods, cluster)
    assert [(d.target, d.first_cause) for d in out] == [
        ("team-a/train-x", "allocation"),
        ("team-a/job-queued-bbbbb", "admission"),
    ]


def test_kube_observer_pod_gone_and_workload_link():
    o = KubeObserver(situation())
    assert o.pod("team-a", "train-x").workload == "job-train-aaaaa"
    with pytest.raises(PodGone, match="pod team-a/nope not found"):
        o.pod("team-a", "nope")


# --- Prometheus ----------------------------------------------------------------------------------------
class RecordingProm:
    """Answers each field's query with the given samples; records the queries."""

    def __init__(self, samples: dict[str, list[Sample]]):
        self.samples, self.queries = samples, []

    def query(self, promql, at=None):
        self.queries.append(promql)
        field = next(f for f in self.samples if f"({f}[" in promql)
        return self.samples[field]


def test_one_query_per_field_joined_by_host_gpu_uuid_and_pod():
    labels = {"Hostname": "gpu-a", "gpu": "0", "UUID": "GPU-1", "namespace": "team-a", "pod": "llm"}
    exported = {
        "Hostname": "gpu-b",
        "gpu": "0",
        "UUID": "GPU-2",
        "exported_namespace": "team-b",
        "exported_pod": "t",
        "pod": "dcgm-exporter-x",
    }
    samples = {f: [] for f in dcgm.DIAGNOSED}
    samples[dcgm.SM_ACTIVE] = [Sample(labels, 0.05), Sample(exported, 0.9), Sample({"gpu": "9"}, 1.0)]
    samples[dcgm.FB_USED] = [Sample(labels, 41461.0)]
    samples[dcgm.FB_FREE] = [Sample(labels, 4607.0)]
    prom = RecordingProm(samples)
    rows = read_gpu_stats(prom, 300)  # type: ignore[arg-type]
    assert len(prom.queries) == len(dcgm.DIAGNOSED)
    assert prom.queries[0] == query_for(dcgm.SM_ACTIVE, 300)
    assert "avg_over_time(DCGM_FI_PROF_SM_ACTIVE[300s])" in prom.queries[0]
    a, b = rows
    assert (a.node, a.uuid, a.holder, a.sm_active, round(a.fb_ratio, 2)) == (
        "gpu-a",
        "GPU-1",
        "team-a/llm",
        0.05,
        0.9,
    )
    assert (b.holder, b.sm_active, b.fb_ratio) == (
        "team-b/t",
        0.9,
        None,
    )  # exported_* beats the exporter's pod


def test_prometheus_unreachable_is_said_with_its_url():
    from local.cluster.prometheus_server import free_port

    url = f"http://127.0.0.1:{free_port()}"
    stats, why = read_or_reason(url, 300, retry_for=0.5)
    assert stats is None and why.startswith(f"Prometheus at {url} unreachable")


CARD_ROWS = (("GPU-diag-a-0", None), ("GPU-diag-a-0", "team-a/llm"), ("GPU-diag-a-1", None))


@pytest.mark.skipif(not shutil.which("prometheus"), reason="prometheus binary not installed (make setup)")
def test_against_a_real_prometheus(sim, prometheus):
    from gpu_finops.clients.promql import PrometheusClient
    from harness.waits import eventually

    values = profile_values("resident-model")
    sim.set_gpus(
        [
            SimGpu("diag-a", 0, "GPU-diag-a-0", values=values, pod=("team-a", "llm", "main")),
            SimGpu("diag-a", 1, "GPU-diag-a-1", values=profile_values("unheld")),
        ]
    )
    prom = PrometheusClient(prometheus.url)
    rows = eventually(
        lambda: [r for r in read_gpu_stats(prom, 60) if r.node == "diag-a"],
        # the held card's FB_USED also has a series of its own, without pod labels (KUBERNETES_VIRTUAL_GPUS:
        # docs/infra.md, "Time-sliced attribution"), so three rows: the card, its holder, the unheld card
        lambda rs: (
            {(r.uuid, r.holder) for r in rs} == {*CARD_ROWS}
            and all(
                r.pcie_tx_bps is not None and r.fb_free_mib is not None
                for r in rs
                if r.holder or "-1" in r.uuid
            )
        ),
        timeout=60,
        interval=1,
        what="both simulated GPUs with every diagnosed field in Prometheus",
    )
    held = next(r for r in rows if r.holder)
    assert held.holder == "team-a/llm" and held.uuid == "GPU-diag-a-0"
    (card,) = [r for r in rows if r.uuid == "GPU-diag-a-0" and not r.holder]
    assert card.fb_used_mib == held.fb_used_mib and card.sm_active is None
    assert held.sm_active == pytest.approx(0.05) and held.fb_ratio == pytest.approx(0.9, abs=0.001)
    assert held.pcie_rx_bps == pytest.approx(20e6)
    nodes = [node_facts(ks.gpu_node("diag-a", 2))]
    hs = holders([ks.pod("llm", phase="Running", node="diag-a", gpus=2)])
    d = diagnose_pod(pod_facts(ks.pod("waiting")), Cluster(tuple(nodes), tuple(hs), (), tuple(rows)))
    assert d.first_cause == "allocation" and "holder:team-a/llm" in d.first.key_evidence


def test_kube_observer_reads_events_written_through_core_v1_which_have_no_event_time():
    """kwok's and Karpenter's events come back from events.k8s.io/v1 with eventTime null; the client's model
    rejects those, so the observer reads the raw JSON (found on the local target by act 7)."""
    kube = situation()
    kube.event_items = []
    kube.raw_events = [
        {
            "metadata": {"namespace": "team-a", "name": "e1", "creationTimestamp": "2026-11-30T16:00:00Z"},
            "eventTime": None,
            "reason": "Created",
            "note": "Created container",
            "regarding": {"kind": "Pod", "namespace": "team-a", "name": "llm"},
        },
        {
            "metadata": {"namespace": "team-a", "name": "e2", "creationTimestamp": "2026-11-30T16:00:01Z"},
            "eventTime": None,
            "deprecatedLastTimestamp": "2026-11-30T16:00:01Z",
            "reason": "FailedScheduling",
            "note": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
            "regarding": {"kind": "Pod", "namespace": "team-a", "name": "train-x"},
        },
    ]
    pods, *_ = KubeObserver(kube).observe(None)
    train = next(p for p in pods if p.name == "train-x")
    assert train.scheduler_message == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."


def test_a_mig_cards_gpu_instances_are_rows_of_their_own_not_averaged_together():
    card = {"hostname": "gpu-m", "gpu": "0", "UUID": "GPU-M"}
    samples = {f: [] for f in dcgm.DIAGNOSED}
    samples[dcgm.SM_ACTIVE] = [
        Sample({**card, "GPU_I_PROFILE": "3g.40gb", "GPU_I_ID": "1"}, 0.0),
        Sample({**card, "GPU_I_PROFILE": "3g.40gb", "GPU_I_ID": "2"}, 0.8),
    ]
    prom = RecordingProm(samples)
    rows = read_gpu_stats(prom, 300)  # type: ignore[arg-type]
    assert "GPU_I_ID" in prom.queries[0]
    assert [(r.uuid, r.holder, r.sm_active) for r in rows] == [("GPU-M/1", None, 0.0), ("GPU-M/2", None, 0.8)]
