"""The diagnosis of a pod whose GPUs come from Dynamic Resource Allocation: its claims, the devices the GPU
driver publishes for the classes they ask, and the scheduler's own DRA reason, each said with evidence."""

from __future__ import annotations

import pytest

from gpu_finops.diagnose.engine import NotDiagnosable, diagnose_pod
from gpu_finops.diagnose.kube_observer import dra_facts, pod_claims, pod_facts
from gpu_finops.diagnose.model import ALLOCATION, PLACEMENT, Cluster, NodeFacts, PodClaim, Taint
from local.sim import dra_driver

NODE = "dra-1"
MESSAGE = (
    "0/3 nodes are available: 1 cannot allocate all claims, 2 node(s) didn't match Pod's node affinity/selector. "
    "still not schedulable, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


def slices(taint_first=False):
    s = dra_driver.resource_slice(NODE, "u", "g6e.12xlarge", ["GPU-a", "GPU-b", "GPU-c", "GPU-d"])
    if taint_first:
        s["spec"]["devices"][0]["taints"] = [
            {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoExecute"}
        ]
    return [s]


def claim(name, count=1, cls="gpu.nvidia.com", devices=(), reserved=(), ns="team-a"):
    c = {"metadata": {"name": name, "namespace": ns},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": cls, "count": count}}]}},
         "status": {}}  # fmt: skip
    if devices:
        c["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.nvidia.com", "pool": NODE, "device": d} for d in devices]}},
            "reservedFor": [{"resource": "pods", "name": p, "uid": p} for p in reserved]}  # fmt: skip
    return c


def waiting(claim_name="train-gpu-x", message=None, limits=None, template="two-gpus", **spec):
    pod = {"metadata": {"name": "train", "namespace": "team-a"},
           "spec": {"containers": [{"name": "main", "resources": {"limits": limits or {}}}], **spec},
           "status": {"phase": "Pending"}}  # fmt: skip
    if template:
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
        if claim_name:
            pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return pod_facts(pod, scheduler_message=message)


def cluster(claims, *, taint_first=False, nodes=None, classes=None):
    return Cluster(
        nodes=tuple(nodes or [NodeFacts(NODE)]),
        dra=dra_facts(
            slices(taint_first), claims, dra_driver.device_classes() if classes is None else classes
        ),
    )


def test_the_scheduler_s_dra_reason_explains_the_wait_naming_the_claim_and_the_devices():
    held = claim("other-gpu", count=3, devices=("gpu-0", "gpu-1", "gpu-2"), reserved=("other",))
    d = diagnose_pod(waiting(message=MESSAGE), cluster([claim("train-gpu-x", count=2), held]))
    f = d.finding(ALLOCATION)
    assert d.first_cause == ALLOCATION and f.explains is True
    assert f.summary == (
        'the scheduler cannot allocate its claim(s) team-a/train-gpu-x: "cannot allocate all claims" (no node has '
        "devices free that satisfy every request of its claims) gpu.nvidia.com: 2 asked, at most 1 free on one "
        "node (1 free, 3 held, 0 tainted on 1 usable node(s))"
    )
    assert f.key_evidence == ("dra-claim:team-a/train-gpu-x", "dra-reason:cannot allocate all claims")
    assert f.evidence["devices"]["gpu.nvidia.com"][NODE]["held"] == {
        "gpu-0": "team-a/other-gpu", "gpu-1": "team-a/other-gpu", "gpu-2": "team-a/other-gpu"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("held", "taint", "explains"),
    [((), False, False), (("gpu-0", "gpu-1"), False, False), (("gpu-0", "gpu-1", "gpu-2"), False, True), (("gpu-1", "gpu-2"), True, True)],
    ids=["all-free", "two-free", "one-free", "one-free-one-tainted"],
)  # fmt: skip
def test_without_a_scheduler_message_free_untainted_devices_decide(held, taint, explains):
    claims = [claim("train-gpu-x", count=2)] + (
        [claim("o", count=len(held), devices=held, reserved=("o",))] if held else []
    )
    f = diagnose_pod(waiting(), cluster(claims, taint_first=taint)).finding(ALLOCATION)
    assert f.explains is explains
    assert ("dra-short:gpu.nvidia.com" in f.key_evidence) is explains


def test_a_claim_in_use_says_so_and_names_the_pods_it_is_reserved_for():
    busy = claim("shared", devices=("gpu-0",), reserved=("a", "b"))
    pod = waiting(claim_name=None, template=None, resourceClaims=[{"name": "gpu", "resourceClaimName": "shared"}],
                  message="0/1 nodes are available: 1 resourceclaim in use.")  # fmt: skip
    f = diagnose_pod(pod, cluster([busy])).finding(ALLOCATION)
    assert f.explains is True and "dra-reason:resourceclaim in use" in f.key_evidence
    assert f.evidence["claims"]["gpu"]["reserved_for"] == ["a", "b"]
    assert f.next_action.startswith("the claim is reserved by other pods")


def test_a_claim_not_made_yet_is_said_with_its_template():
    f = diagnose_pod(waiting(claim_name=None), cluster([])).finding(ALLOCATION)
    assert f.explains is False and "gpu (not made yet (template two-gpus))" in f.summary


def test_an_extended_resource_served_from_dra_is_read_as_a_claim_on_the_nodes_that_do_not_advertise_it():
    pod = waiting(template=None, limits={"nvidia.com/gpu": "5"})
    f = diagnose_pod(pod, cluster([])).finding(ALLOCATION)
    assert f.explains is True and f.evidence["claims"]["extended-resources"]["requests"] == [
        "5 x gpu.nvidia.com"
    ]
    plugin = NodeFacts("dp-1", allocatable={"nvidia.com/gpu": 8}, capacity={"nvidia.com/gpu": 8})
    f = diagnose_pod(pod, cluster([], nodes=[NodeFacts(NODE), plugin])).finding(ALLOCATION)
    # either way serves it: the device plugin's node has 8 free, the DRA node 4 (of the 5 asked)
    assert f.explains is False and f.summary.startswith(
        "either: on the device plugin's nodes, nvidia.com/gpu free"
    )
    assert set(f.evidence) == {"device_plugin", "dra"}


def test_on_a_mixed_fleet_an_extended_resource_waits_only_when_neither_way_has_room():
    from gpu_finops.diagnose.model import Holder

    plugin = NodeFacts("dp-1", allocatable={"nvidia.com/gpu": 1}, capacity={"nvidia.com/gpu": 1})
    full = Cluster(nodes=(NodeFacts(NODE), plugin), holders=(Holder("team-b", "x", "dp-1", {"nvidia.com/gpu": 1}),),
                   dra=cluster([]).dra)  # fmt: skip
    one = waiting(template=None, limits={"nvidia.com/gpu": "1"})
    assert diagnose_pod(one, full).finding(ALLOCATION).explains is False  # the DRA node has 4 free
    five = waiting(template=None, limits={"nvidia.com/gpu": "5"})
    assert diagnose_pod(five, full).finding(ALLOCATION).explains is True  # 0 free there, 4 here: neither


def test_a_pod_asking_a_device_plugin_resource_and_its_own_claim_waits_when_either_cannot_be_met():
    from gpu_finops.diagnose.model import Holder

    plugin = NodeFacts("dp-1", allocatable={"nvidia.com/gpu": 1}, capacity={"nvidia.com/gpu": 1})
    held = Holder("team-b", "x", "dp-1", {"nvidia.com/gpu": 1})
    pod = waiting(limits={"nvidia.com/gpu": "1"})  # and its claim train-gpu-x of one gpu.nvidia.com device
    both = Cluster(nodes=(NodeFacts(NODE), plugin), holders=(held,), dra=cluster([claim("train-gpu-x")]).dra)
    f = diagnose_pod(pod, both).finding(ALLOCATION)
    assert f.explains is True and f.summary.startswith(
        "both: on the device plugin's nodes, every nvidia.com/gpu"
    )


def test_a_class_the_diagnosis_does_not_read_is_not_checked_and_unread_dra_is_said():
    f = diagnose_pod(waiting(), cluster([claim("train-gpu-x", cls="nic.example.com")])).finding(ALLOCATION)
    assert f.explains is None and "['nic.example.com']" in f.summary
    f = diagnose_pod(waiting(), Cluster(nodes=(NodeFacts(NODE),))).finding(ALLOCATION)
    assert f.explains is None and f.summary.endswith("ResourceSlices and ResourceClaims were not read")


def test_placement_explains_when_the_pod_s_constraints_rule_out_every_node_publishing_the_devices():
    tainted = NodeFacts(NODE, taints=(Taint("gpu", "NoSchedule"),))
    f = diagnose_pod(waiting(), cluster([claim("train-gpu-x")], nodes=[tainted])).finding(PLACEMENT)
    assert f.explains is True and f.key_evidence == (f"ruled-out:{NODE}:taint",)
    f = diagnose_pod(waiting(), cluster([claim("train-gpu-x")])).finding(PLACEMENT)
    assert f.explains is False and f.summary == f"the pod's constraints allow {NODE}"


def test_a_pod_is_read_with_its_claims_and_one_with_neither_gpus_nor_claims_is_not_diagnosable():
    spec = {
        "resourceClaims": [
            {"name": "a", "resourceClaimName": "fixed"},
            {"name": "b", "resourceClaimTemplateName": "t"},
        ]
    }
    status = {"resourceClaimStatuses": [{"name": "b", "resourceClaimName": "p-b-xyz"}],
              "extendedResourceClaimStatus": {"resourceClaimName": "p-extended-resources-q"}}  # fmt: skip
    assert pod_claims(spec, status) == (
        PodClaim("a", "fixed"), PodClaim("b", "p-b-xyz", "t"), PodClaim("extended-resources", "p-extended-resources-q")
    )  # fmt: skip
    with pytest.raises(NotDiagnosable) as err:
        diagnose_pod(waiting(template=None), cluster([]))
    assert str(err.value).endswith("and references no ResourceClaim")


def test_the_scheduler_s_reason_in_the_pod_s_condition_is_read_when_a_newer_event_is_karpenter_s():
    pod = {"metadata": {"name": "train", "namespace": "team-a"},
           "spec": {"containers": [{"name": "main"}], "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
           "status": {"phase": "Pending", "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "train-gpu-x"}],
                      "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": MESSAGE}]}}  # fmt: skip
    karpenter = 'Failed to schedule pod, incompatible with nodepool "gpu", daemonset overhead={"cpu":"0"}'
    f = diagnose_pod(pod_facts(pod, scheduler_message=karpenter), cluster([claim("train-gpu-x")])).finding(
        ALLOCATION
    )
    assert f.explains is True and f.key_evidence[-1] == "dra-reason:cannot allocate all claims"
    assert (f.evidence["scheduler_message"], f.evidence["pod_scheduled_message"]) == (karpenter, MESSAGE)


@pytest.mark.parametrize(
    "message",
    [
        '0/3 nodes are available: 3 persistentvolumeclaim "data" does not exist.',
        "0/3 nodes are available: 3 node(s) had untolerated taint. The operator wrote: cannot allocate all claims.",
    ],
    ids=["another-object-does-not-exist", "a-quoted-phrase"],
)
def test_a_reason_phrase_inside_another_item_is_not_the_scheduler_s_dra_reason(message):
    f = diagnose_pod(waiting(message=message), cluster([claim("train-gpu-x")])).finding(ALLOCATION)
    assert not any(k.startswith("dra-reason:") for k in f.key_evidence) and f.explains is False


def test_a_prefilter_reason_without_a_node_count_is_read():
    message = "0/3 nodes are available: request gpu: device class gpu.example.com does not exist. preemption: not helpful."
    f = diagnose_pod(waiting(message=message), cluster([claim("train-gpu-x")])).finding(ALLOCATION)
    assert f.key_evidence[-1] == "dra-reason:device class does not exist"


@pytest.mark.parametrize(
    ("request_", "said"),
    [
        ({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "mig.nvidia.com"}]}, "request gpu: a prioritized list (firstAvailable), which is not read"),
        ({"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}, "request gpu: allocation mode All"),
        ({"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 0}}, "request gpu: count 0 is not a whole number from 1"),
        ({"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": "two"}}, "request gpu: count 'two' is not a whole number from 1"),
    ],
    ids=["first-available", "all", "count-zero", "count-text"],
)  # fmt: skip
def test_a_request_the_diagnosis_does_not_read_is_said_not_checked_naming_the_claim(request_, said):
    c = claim("train-gpu-x")
    c["spec"]["devices"]["requests"] = [request_]
    f = diagnose_pod(waiting(), cluster([c])).finding(ALLOCATION)
    assert f.explains is None and f.summary.startswith(f"not checked: claim team-a/train-gpu-x: {said}"), (
        f.summary
    )


def test_a_claim_of_the_pod_not_found_in_its_namespace_is_said_not_a_look_alike_of_another():
    f = diagnose_pod(waiting(), cluster([claim("train-gpu-x", ns="other")])).finding(ALLOCATION)
    assert f.explains is None
    assert (
        f.summary
        == "not checked: the pod's claim(s) team-a/train-gpu-x were not found among the cluster's ResourceClaims"
    )


def test_gpus_shares_read_a_dra_node_by_its_published_cards_and_each_pod_s_part_through_its_claims():
    from fractions import Fraction

    from gpu_finops.diagnose.gpus import node_shares

    shared = claim("shared", devices=("gpu-0",), reserved=("a", "b"))
    whole = claim("own", count=2, devices=("gpu-1", "gpu-2"), reserved=("c",))
    (n,) = node_shares((NodeFacts(NODE),), (), cluster([shared, whole]).dra)
    assert (n.cards, n.sharing, n.problem) == (4, "dra", None)
    assert n.held == (
        ("team-a/a", "claim shared", 1, Fraction(1, 2)),
        ("team-a/b", "claim shared", 1, Fraction(1, 2)),
        ("team-a/c", "claim own", 2, Fraction(2)),
    )
    assert n.unheld == 1


def test_slices_or_claims_the_model_refuses_leave_the_dra_checks_not_checked_naming_why():
    twice = [
        claim("c1", devices=("gpu-0",), reserved=("p1",)),
        claim("c2", devices=("gpu-0",), reserved=("p2",)),
    ]
    facts = cluster(twice).dra
    assert facts.problem and facts.problem.startswith(
        "ResourceClaim team-a/c2: allocates device gpu-0 of pool dra-1"
    )
    assert (facts.devices, facts.held, facts.cards) == ((), (), {})
    f = diagnose_pod(waiting(), cluster(twice)).finding(ALLOCATION)
    assert (
        f.explains is None
        and "the DRA driver's devices or claims cannot be read: ResourceClaim team-a/c2" in f.summary
    )


def test_an_allocated_claim_pins_the_pod_to_its_node_and_placement_reads_that_node_only():
    shared = claim("shared", devices=("gpu-0",), reserved=("other",))
    pod = waiting(claim_name=None, template=None, resourceClaims=[{"name": "gpu", "resourceClaimName": "shared"}],
                  nodeSelector={"zone": "b"})  # fmt: skip
    elsewhere = NodeFacts("dra-2", labels={"zone": "b"})
    c = Cluster(nodes=(NodeFacts(NODE, labels={"zone": "a"}), elsewhere), dra=cluster([shared]).dra)
    d = diagnose_pod(pod, c)
    a, p = d.finding(ALLOCATION), d.finding(PLACEMENT)
    assert a.explains is False and a.summary.startswith(
        "its claim(s) team-a/shared are allocated already (gpu: dra-1/gpu-0"
    )
    assert p.explains is True and p.key_evidence == (f"ruled-out:{NODE}:selector",)
    assert p.summary.startswith(
        f"the pod's constraints rule out the node(s) its allocated claim(s) are on ({NODE})"
    )


def test_a_device_taint_the_claim_tolerates_leaves_the_device_free():
    c = claim("train-gpu-x", count=4)
    c["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
        {"key": "gpu.nvidia.com/xid", "operator": "Exists"}
    ]
    f = diagnose_pod(waiting(), cluster([c], taint_first=True)).finding(ALLOCATION)
    assert f.explains is False and "4 free, 0 held, 0 tainted" in f.summary
    f = diagnose_pod(waiting(), cluster([claim("train-gpu-x", count=4)], taint_first=True)).finding(
        ALLOCATION
    )
    assert f.explains is True and "3 free, 0 held, 1 tainted" in f.summary


@pytest.mark.parametrize(
    ("claims", "pod_claim", "said"),
    [
        ([claim("c1", devices=("gpu-9",), reserved=("p",))], "train-gpu-x", "not checked: ResourceClaim team-a/c1: allocated device gpu-9"),
        ([], "train-gpu-x", "not checked: the pod's claim(s) train-gpu-x were not found"),
        ([claim("train-gpu-x", cls="nic.example.com")], "train-gpu-x", "not checked: its claims ask no DeviceClass this diagnosis reads"),
    ],
    ids=["unreadable", "missing", "unmapped-class"],
)  # fmt: skip
def test_placement_is_not_checked_where_the_claims_or_devices_cannot_be_read(claims, pod_claim, said):
    f = diagnose_pod(waiting(claim_name=pod_claim), cluster(claims)).finding(PLACEMENT)
    assert f.explains is None and f.summary.startswith(said), f.summary


def test_the_class_serving_an_extended_resource_is_the_newest_then_the_first_by_name():
    from gpu_finops.diagnose.kube_observer import serving_classes

    def cls(name, created):
        return {
            "metadata": {"name": name, "creationTimestamp": created},
            "spec": {"extendedResourceName": "nvidia.com/gpu"},
        }

    assert serving_classes([cls("b", "2026-01-01T00:00:00Z"), cls("a", "2026-01-01T00:00:00Z")]) == {
        "nvidia.com/gpu": "a"
    }
    assert serving_classes([cls("a", "2026-01-01T00:00:00Z"), cls("z", "2030-01-01T00:00:00Z"), "x"]) == {
        "nvidia.com/gpu": "z"
    }


def test_another_component_s_message_quoting_a_reason_is_not_the_scheduler_s():
    karpenter = 'Failed to schedule pod, incompatible with nodepool "gpu", cannot allocate all claims'
    f = diagnose_pod(waiting(message=karpenter), cluster([claim("train-gpu-x")])).finding(ALLOCATION)
    assert not any(k.startswith("dra-reason:") for k in f.key_evidence)


def test_gpus_shares_say_what_contradicts_a_dra_reading_and_what_could_not_be_read():
    from gpu_finops.diagnose.gpus import node_shares
    from gpu_finops.diagnose.model import Holder

    own = claim("own", devices=("gpu-1",), reserved=("c",))
    stray = Holder("team-a", "dp", NODE, {"nvidia.com/gpu": 2})
    (n,) = node_shares((NodeFacts(NODE),), (stray,), cluster([own]).dra)
    assert n.problem == "pod(s) team-a/dp ask a GPU resource on this DRA node and hold no claim's device"
    advertised = NodeFacts(NODE, allocatable={"nvidia.com/gpu": 4}, capacity={"nvidia.com/gpu": 4})
    (n,) = node_shares((advertised,), (), cluster([own]).dra)
    assert n.cards is None and n.problem.startswith(
        "advertises GPU resources and its pods team-a/c also hold DRA devices"
    )
    unread = cluster([claim("c1", devices=("gpu-9",), reserved=("p",))]).dra
    (row,) = node_shares((NodeFacts(NODE),), (), unread)
    assert (row.node, row.cards) == ("(DRA devices)", None) and row.problem.startswith(
        "not read: ResourceClaim team-a/c1"
    )
