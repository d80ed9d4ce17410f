"""`diagnose_all` shares one index per cluster and GPU resource between its diagnoses (gpu_finops/diagnose/view.py's
ClusterIndex): the shared diagnoses must be exactly the ones each pod and workload gets alone, and an index
must never answer for another cluster or another resource."""

from __future__ import annotations

from dataclasses import replace

import pytest

from benchmarks.diagnose import fleet
from gpu_finops.diagnose.engine import diagnose_all, diagnose_pod, diagnose_workload
from gpu_finops.diagnose.model import (
    GPU,
    GPU_SHARED,
    Cluster,
    PodFacts,
    Requirement,
    SelectorTerm,
    Toleration,
)
from gpu_finops.diagnose.view import build_view, index_cluster
from tests.gpu_finops.diagnose import diagnose_fixtures as fx


def _alone(pods, cluster):
    """Each pending GPU pod, then each workload diagnose_all would list, diagnosed on its own."""
    out = [diagnose_pod(p, cluster).to_dict() for p in pods]
    listed = {(p.namespace, p.workload) for p in pods if p.workload}
    for w in cluster.workloads:
        if (w.namespace, w.name) in listed or (w.admitted and w.job_suspended is not True):
            continue
        if not w.is_true("Finished"):
            out.append(diagnose_workload(w, cluster).to_dict())
    return out


def _variety(base: PodFacts) -> list[PodFacts]:
    """Pods that differ in every input an index or a per-view cache could mix up: resource, count,
    tolerations, selector, affinity."""
    return [
        base,
        replace(base, name="two", gpu_requests={GPU: 2}),
        replace(base, name="shared", gpu_requests={GPU_SHARED: 1}),
        replace(base, name="tolerant", tolerations=(Toleration(operator="Exists"),)),
        replace(base, name="serve-only", node_selector={"pool": "serve"}),
        replace(
            base,
            name="train-affinity",
            required_terms=(SelectorTerm((Requirement("pool", "In", ("train",)),)),),
        ),
    ]


@pytest.mark.parametrize(
    "situation",
    [
        fx.allocation_situation,
        fx.memory_situation,
        fx.placement_situation,
        fx.application_situation,
        fx.small_batch_situation,
        fx.allocation_and_application_situation,
        fx.allocation_and_placement_situation,
    ],
)
def test_diagnose_all_gives_each_pod_what_it_gets_alone(situation):
    pod, cluster = situation()
    pods = _variety(pod)
    cluster = replace(cluster, workloads=(*cluster.workloads, fx.unadmitted("wl-queued")))
    shared = [d.to_dict() for d in diagnose_all(pods, cluster)]
    assert shared == _alone(pods, cluster)
    assert len(shared) == len(pods) + 1


def test_a_fleet_with_every_gpu_held_gives_the_same_diagnoses_shared_or_alone():
    pods, cluster = fleet(nodes=12, pending=4, unadmitted=3)
    pods = [*pods, replace(pods[0], name="small", gpu_requests={GPU: 1})]
    shared = [d.to_dict() for d in diagnose_all(pods, cluster)]
    assert shared == _alone(pods, cluster)
    assert [d["first_cause"] for d in shared[:5]] == ["allocation"] * 5, shared[0]


def test_an_index_of_another_cluster_is_not_used():
    pod, full = fx.allocation_situation()
    empty = Cluster(nodes=full.nodes, holders=(), workloads=(), stats=full.stats)
    stale = index_cluster(full, GPU)
    v = build_view(pod, empty, stale)
    assert v.index is not stale
    assert v.held == {}, "the other cluster's holders answered for this one"
    assert all(v.fits(n) for n in v.gpu_nodes())


def test_an_index_of_another_resource_is_not_used():
    pod, cluster = fx.allocation_situation()
    stale = index_cluster(cluster, GPU)
    shared_pod = replace(pod, gpu_requests={GPU_SHARED: 1})
    v = build_view(shared_pod, cluster, stale)
    assert v.index is not stale and v.index.resource == GPU_SHARED
    assert v.gpu_nodes() == [], "nodes advertising only nvidia.com/gpu were offered for the shared resource"


def test_an_index_of_this_cluster_and_resource_is_reused():
    pod, cluster = fx.allocation_situation()
    index = index_cluster(cluster, GPU)
    assert build_view(pod, cluster, index).index is index
