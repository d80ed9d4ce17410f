"""The diagnosis walk: each cause first in its own situation, later checks still shown, the order deciding
when two causes hold at once, and memory/application reported as not checked without DCGM."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpu_finops.diagnose import activity as act
from gpu_finops.diagnose.engine import NotDiagnosable, diagnose_all, diagnose_pod, diagnose_workload
from gpu_finops.diagnose.model import (
    ADMISSION,
    ALLOCATION,
    APPLICATION,
    MEMORY,
    ORDER,
    PLACEMENT,
    Cluster,
    PodFacts,
)
from gpu_finops.facts.conditions import Condition
from local.sim.profiles import PROFILES, profile_values
from tests.gpu_finops.diagnose import diagnose_fixtures as fx


def explains(d) -> dict[str, bool | None]:
    return {f.check: f.explains for f in d.findings}


@pytest.mark.parametrize(
    "situation, first, also, key, summary",
    [
        (
            fx.allocation_situation,
            ALLOCATION,
            (),
            {"holder:team-a/llm-a", "holder:team-a/llm-b"},
            "2 of 2 holder(s) look idle (SM_ACTIVE < 0.10) yet own their devices",
        ),
        (
            fx.memory_situation,
            MEMORY,
            (),
            {"vram-full:gpu-ts/GPU-gpu-ts-0"},
            "3 nvidia.com/gpu slot(s) free on gpu-ts, but every such card's VRAM is resident "
            "(gpu-ts/GPU-gpu-ts-0 90% used, SM 0.05): held warm without matching compute",
        ),
        (
            fx.placement_situation,
            PLACEMENT,
            (),
            {"ruled-out:gpu-tainted:taint", "ruled-out:gpu-serve:affinity", "only-match:gpu-busy"},
            "the only node(s) that match (gpu-busy) have no room",
        ),
        (
            fx.application_situation,
            APPLICATION,
            (),
            {"starved:team-a/starved"},
            "team-a/starved is data-starved (SM 0.02, PCIe 10.0 MB/s)",
        ),
        (
            fx.small_batch_situation,
            APPLICATION,
            (),
            {"small-batch:team-a/server"},
            "team-a/server is transfer-bound (PCIe 3.00 GB/s, SM occupancy 0.08)",
        ),
        (
            fx.allocation_and_application_situation,
            ALLOCATION,
            (APPLICATION,),
            {"holder:team-a/llm", "holder:team-a/starved"},
            "1 of 2 holder(s) look idle",
        ),
        (
            fx.allocation_and_placement_situation,
            ALLOCATION,
            (PLACEMENT,),
            {"holder:team-a/llm-a"},
            "every nvidia.com/gpu is held",
        ),
    ],
)
def test_pod_first_cause_key_evidence_and_every_later_check_shown(situation, first, also, key, summary):
    pod, cluster = situation()
    d = diagnose_pod(pod, cluster)
    assert d.first_cause == first, [f.to_dict() for f in d.findings]
    assert d.also_explains == also
    assert key <= set(d.first.key_evidence), d.first.key_evidence
    assert summary in d.first.summary, d.first.summary
    assert [f.check for f in d.findings] == list(ORDER)
    assert all(f.explains is not None for f in d.findings)  # DCGM was read: every check was made
    assert d.first.next_action


def test_admission_first_for_an_unadmitted_workload_with_later_checks_on_its_template():
    w, cluster = fx.admission_situation()
    d = diagnose_workload(w, cluster)
    assert d.first_cause == ADMISSION and d.kind == "workload"
    # built by hand: no visibility API was read and the reason is the legacy one, so both are said as fallbacks
    assert set(d.first.key_evidence) == {
        "workload:team-a/wl-1",
        "QuotaReserved=False",
        "suspended",
        "kueue-fallback:position",
        "kueue-fallback:reason",
    }
    assert d.first.summary.startswith("fallback: Kueue's visibility API was not read for it; fallback: ")
    assert "insufficient unused quota for nvidia.com/gpu" in d.first.summary
    assert "no pod exists for the scheduler" in d.first.summary
    assert d.also_explains == (ALLOCATION,)  # the template would also find every card held


def test_admission_and_placement_order_decides_and_a_placement_first_walk_gets_it_wrong():
    w, cluster = fx.admission_and_placement_situation()
    d = diagnose_workload(w, cluster)
    assert d.first_cause == ADMISSION and d.also_explains == (PLACEMENT,)
    assert "ruled-out:gpu-t:taint" in d.finding(PLACEMENT).key_evidence
    mutated = diagnose_workload(w, cluster, order=(PLACEMENT, ADMISSION, ALLOCATION, MEMORY, APPLICATION))
    assert mutated.first_cause == PLACEMENT


def test_order_must_be_a_permutation():
    pod, cluster = fx.allocation_situation()
    with pytest.raises(ValueError, match="permutation"):
        diagnose_pod(pod, cluster, order=(ALLOCATION, PLACEMENT))


def test_placement_evidence_names_each_node_rule_and_the_scheduler_message():
    pod, cluster = fx.placement_situation()
    pod = replace(pod, scheduler_message="0/3 nodes are available: 1 Insufficient nvidia.com/gpu, ...")
    f = diagnose_pod(pod, cluster).finding(PLACEMENT)
    nodes = f.evidence["nodes"]
    assert nodes["gpu-tainted"]["ruled_out_by"] == [
        "taint: taint nvidia.com/gpu=present:NoSchedule not tolerated"
    ]
    assert nodes["gpu-serve"]["ruled_out_by"] == [
        "affinity: required node affinity: term 0: pool In ['train'] (node has pool=serve)"
    ]
    assert nodes["gpu-busy"]["capacity"].startswith("insufficient-gpus")
    assert f.evidence["scheduler_message"].startswith("0/3 nodes are available")
    assert "add a toleration" in f.next_action and "relax the pod's nodeSelector" in f.next_action


def test_a_tolerating_pod_in_the_placement_situation_is_not_placement():
    pod, cluster = fx.placement_situation()
    d = diagnose_pod(replace(pod, tolerations=(fx.TOLERATE_GPU,)), cluster)
    assert d.finding(PLACEMENT).explains is False


def test_prometheus_unreachable_gives_kubernetes_findings_and_names_what_was_not_checked():
    pod, c = fx.allocation_situation()
    d = diagnose_pod(
        pod, replace(c, stats=None, stats_unavailable="Prometheus at http://prom:9090 unreachable")
    )
    assert d.first_cause == ALLOCATION
    assert (
        "what they do with it was not checked (Prometheus at http://prom:9090 unreachable)" in d.first.summary
    )
    assert d.not_checked == (MEMORY, APPLICATION)
    for check in (MEMORY, APPLICATION):
        assert d.finding(check).summary == (
            f"not checked: {check} needs DCGM over the window (Prometheus at http://prom:9090 unreachable)"
        )


def test_without_dcgm_a_memory_situation_is_not_guessed():
    pod, c = fx.memory_situation()
    d = diagnose_pod(pod, replace(c, stats=None, stats_unavailable="Prometheus at X unreachable"))
    assert d.first_cause is None
    assert d.not_checked == (MEMORY, APPLICATION)


def test_all_holders_busy_is_allocation_with_add_capacity():
    pod, _ = fx.allocation_situation()
    c = fx.cluster([fx.gpu_node("gpu-a")], [fx.holding("gpu-a", "t", "busy-trainer")])
    d = diagnose_pod(pod, c)
    assert d.first_cause == ALLOCATION and "genuinely full" in d.first.summary
    assert "add capacity" in d.first.next_action


def test_no_gpu_node_at_all_is_allocation():
    d = diagnose_pod(fx.pending(), fx.cluster([], []))
    assert d.first_cause == ALLOCATION and "no Ready, schedulable node advertises" in d.first.summary


def test_a_cordoned_only_node_is_not_usable_for_allocation_and_rules_out_placement():
    c = fx.cluster([fx.gpu_node("gpu-a", unschedulable=True)], [], free_cards=[("gpu-a", 0)])
    d = diagnose_pod(fx.pending(), c)
    assert d.first_cause == ALLOCATION and d.also_explains == (PLACEMENT,)
    assert "ruled-out:gpu-a:unschedulable" in d.finding(PLACEMENT).key_evidence


def test_a_pod_asking_two_where_each_node_has_one_free():
    c = fx.cluster(
        [fx.gpu_node("gpu-a", 2), fx.gpu_node("gpu-b", 2)], [fx.holding("gpu-a", "x", "busy-trainer")]
    )
    d = diagnose_pod(fx.pending(gpu_requests={"nvidia.com/gpu": 2}), c)
    assert d.finding(ALLOCATION).explains is False  # gpu-b has 2 free


def test_bound_pending_pod_on_full_vram_is_memory():
    pod, c = fx.memory_situation()
    d = diagnose_pod(replace(pod, node_name="gpu-ts"), c)
    assert d.first_cause == MEMORY and "bound to gpu-ts" in d.first.summary
    assert explains(d)[ALLOCATION] is False and explains(d)[PLACEMENT] is False


@pytest.mark.parametrize(
    "pod, reason",
    [
        (
            PodFacts("ns", "web", phase="Running", node_name="n1", gpu_requests={"nvidia.com/gpu": 1}),
            "is not pending: it is Running on node n1",
        ),
        (
            PodFacts("ns", "done", phase="Succeeded", gpu_requests={"nvidia.com/gpu": 1}),
            "is not pending: it is Succeeded",
        ),
        (
            PodFacts("ns", "cpu"),
            "is not a GPU pod: it requests neither nvidia.com/gpu nor nvidia.com/gpu.shared",
        ),
    ],
)
def test_not_diagnosable_says_why(pod, reason):
    with pytest.raises(NotDiagnosable, match=reason):
        diagnose_pod(pod, Cluster())


def test_shared_resource_is_counted_on_its_own():
    node = replace(fx.gpu_node("gpu-s"), allocatable={"nvidia.com/gpu.shared": 4})
    c = fx.cluster([node], [])
    d = diagnose_pod(fx.pending(gpu_requests={"nvidia.com/gpu.shared": 1}), c)
    assert d.finding(ALLOCATION).explains is False


def test_pod_of_an_admitted_workload_is_not_admission():
    pod, c = fx.allocation_situation()
    w = replace(
        fx.unadmitted("wl-ok"),
        conditions={
            "QuotaReserved": Condition("QuotaReserved", "True"),
            "Admitted": Condition("Admitted", "True"),
        },
        job_suspended=False,
    )
    d = diagnose_pod(replace(pod, workload="wl-ok"), replace(c, workloads=(w,)))
    assert d.finding(ADMISSION).explains is False and "admitted" in d.finding(ADMISSION).summary


def test_diagnose_all_lists_pending_gpu_pods_and_unadmitted_workloads_once():
    pod, c = fx.allocation_situation()
    w = fx.unadmitted()
    running = PodFacts(
        "team-a", "llm-a", phase="Running", node_name="gpu-a", gpu_requests={"nvidia.com/gpu": 1}
    )
    cpu = PodFacts("team-a", "cpu")
    out = diagnose_all([pod, running, cpu], replace(c, workloads=(w,)))
    assert [(d.kind, d.target) for d in out] == [("pod", "team-a/waiting"), ("workload", "team-a/wl-1")]
    assert diagnose_all([pod], replace(c, workloads=(w,)), namespace="other") == []


@pytest.mark.parametrize(
    "profile, kind",
    [
        ("resident-model", act.RESIDENT),
        ("data-starved", act.STARVED),
        ("busy-trainer", act.BUSY),
        ("small-batch-server", act.SMALL_BATCH),
        ("unheld", act.IDLE),
    ],
)
def test_each_simulator_profile_classifies_as_named(profile, kind):
    a = act.activity([fx.stats("n", 0, profile, None)])
    assert act.classify(a) == kind


def test_profiles_are_complete_and_unknown_is_loud():
    for p in PROFILES:
        v = profile_values(p)
        assert v["DCGM_FI_DEV_FB_USED"] + v["DCGM_FI_DEV_FB_FREE"] == 46068.0
    with pytest.raises(ValueError, match="unknown GPU profile 'resident'; known: resident-model"):
        profile_values("resident")


def test_to_dict_is_json_ready():
    import json

    pod, c = fx.placement_situation()
    text = json.dumps(diagnose_pod(pod, c).to_dict())
    assert '"first_cause": "placement"' in text
