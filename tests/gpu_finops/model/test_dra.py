"""The held-GPU model reads DRA: installed devices from ResourceSlices (newest complete generation of each
pool), allocations from ResourceClaims (results x reservedFor), each device's part of its card."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gpu_finops.model import dra
from gpu_finops.model.holding import Kind
from local.sim import dra_driver


def gpu_slice(node="n1", uuids=("GPU-a", "GPU-b"), generation=1, count=1):
    s = dra_driver.resource_slice(node, "uid", "g6e.12xlarge", list(uuids))
    s["spec"]["pool"] |= {"generation": generation, "resourceSliceCount": count}
    return s


def mig_slice(node="m1"):
    devs = [
        {
            "name": f"gpu-0-mig-1g10gb-19-{i}",
            "attributes": {
                "type": {"string": "mig"},
                "uuid": {"string": f"MIG-{i}"},
                "parentUUID": {"string": "GPU-p"},
                "profile": {"string": "1g.10gb"},
            },
        }
        for i in range(2)
    ] + [
        {
            "name": "gpu-0-mig-3g40gb-9-4",
            "attributes": {
                "type": {"string": "mig"},
                "uuid": {"string": "MIG-9"},
                "parentUUID": {"string": "GPU-p"},
                "profile": {"string": "3g.40gb"},
            },
        }
    ]
    return {"metadata": {"name": f"{node}-gpu.nvidia.com"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devs}}  # fmt: skip


def claim(name, results, pods, ns="team-a"):
    return {"metadata": {"name": name, "namespace": ns},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "gpu.nvidia.com", "pool": pool, "device": dev} for pool, dev in results]}},
                "reservedFor": [{"resource": "pods", "name": p, "uid": p} for p in pods]}}  # fmt: skip


def test_whole_cards_are_installed_per_pool_and_held_by_the_pods_their_claims_are_reserved_for():
    devices = dra.installed([gpu_slice()])
    assert (
        sorted(k[2] for k in devices) == ["gpu-0", "gpu-1"]
        and devices[("gpu.nvidia.com", "n1", "gpu-0")].node == "n1"
    )
    (h,) = dra.held([claim("c1", [("n1", "gpu-1")], ["p1"])], devices, {"team-a": "team-a"})
    assert (h.device.id, h.card, h.kind, h.share, h.holder.pod, h.holder.tenant) == (
        "GPU-b",
        "GPU-b",
        Kind.WHOLE,
        1,
        "p1",
        "team-a",
    )


def test_a_claim_shared_by_two_pods_splits_its_card_between_them():
    devices = dra.installed([gpu_slice()])
    got = dra.held([claim("c1", [("n1", "gpu-0")], ["p1", "p2"])], devices)
    assert [(h.holder.pod, h.share) for h in got] == [("p1", Fraction(1, 2)), ("p2", Fraction(1, 2))]


def test_mig_slices_hold_their_compute_over_what_is_cut_on_their_card():
    devices = dra.installed([mig_slice()])
    share = dra.shares(devices)
    assert sorted(share.values()) == [Fraction(1, 5), Fraction(1, 5), Fraction(3, 5)]
    assert {d.card for d in devices.values()} == {"GPU-p"}


def test_only_the_newest_generation_of_a_pool_counts():
    devices = dra.installed(
        [gpu_slice(uuids=("GPU-old",), generation=1), gpu_slice(uuids=("GPU-a", "GPU-b"), generation=2)]
    )
    assert sorted(d.uuid for d in devices.values()) == ["GPU-a", "GPU-b"]


def test_an_incomplete_newest_generation_is_an_error_not_a_smaller_count():
    with pytest.raises(
        dra.DraReadError, match=r"pool n1 of gpu.nvidia.com: generation 2 has 1 of its 2 ResourceSlice"
    ):
        dra.installed([gpu_slice(generation=2, count=2)])


def test_a_claim_naming_a_device_nobody_publishes_is_named():
    with pytest.raises(dra.DraReadError, match=r"ResourceClaim team-a/c9: allocated device gpu-7 of pool n1"):
        dra.held([claim("c9", [("n1", "gpu-7")], ["p1"])], dra.installed([gpu_slice()]))


def test_unallocated_or_unreserved_claims_hold_nothing():
    devices = dra.installed([gpu_slice()])
    assert dra.held([claim("c1", [("n1", "gpu-0")], [])], devices) == []
    assert dra.held([{"metadata": {"name": "c2", "namespace": "x"}, "status": {}}], devices) == []


def test_a_node_publishes_its_cards_installed_and_the_untainted_ones_schedulable_a_cut_card_once():
    s = gpu_slice(uuids=("GPU-a", "GPU-b", "GPU-c"))
    s["spec"]["devices"][1]["taints"] = [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoExecute"}]
    s["spec"]["devices"][2]["taints"] = [
        {"key": "note", "effect": "None"}
    ]  # says something, keeps nothing off
    got = dra.node_cards(dra.installed([s, mig_slice()]))
    assert got == {
        "n1": dra.NodeCards(installed=Fraction(3), schedulable=Fraction(2)),
        "m1": dra.NodeCards(installed=Fraction(1), schedulable=Fraction(1)),
    }


def test_taints_that_are_not_a_list_of_taints_are_refused_naming_the_device():
    s = gpu_slice()
    s["spec"]["devices"][0]["taints"] = "NoSchedule"
    with pytest.raises(dra.DraReadError) as err:
        dra.installed([s])
    assert str(err.value) == (
        "ResourceSlice n1-gpu.nvidia.com device 'gpu-0' taints: 'NoSchedule' is not a list of objects"
    )


def test_a_claim_whose_reserved_for_is_not_a_list_of_consumers_is_refused_naming_the_claim():
    c = claim("c", [("n1", "gpu-0")], ["p"])
    c["status"]["reservedFor"] = {"resource": "pods", "name": "p"}
    with pytest.raises(dra.DraReadError) as err:
        dra.reservations([c], dra.installed([gpu_slice()]))
    assert str(err.value) == (
        "ResourceClaim team-a/c status.reservedFor: {'resource': 'pods', 'name': 'p'} is not a list of objects"
    )


def test_each_reservation_names_its_claim_and_node_and_groups_by_pod():
    got = dra.by_pod(
        dra.reservations(
            [claim("c", [("n1", "gpu-0"), ("n1", "gpu-1")], ["p"])], dra.installed([gpu_slice()])
        )
    )
    assert [(r.claim, r.node, r.held.device.id) for r in got[("team-a", "p")]] == [
        ("c", "n1", "GPU-a"),
        ("c", "n1", "GPU-b"),
    ]


def _refused(slices_or_claims, *, claims=None) -> str:
    with pytest.raises(dra.DraReadError) as err:
        if claims is None:
            dra.installed(slices_or_claims)
        else:
            dra.reservations(claims, dra.installed(slices_or_claims))
    return str(err.value)


def _with(s, **pool):
    s["spec"]["pool"] |= pool
    return s


def test_a_card_published_twice_is_refused_naming_its_uuid_whichever_way():
    two_nodes = [gpu_slice("n1", ("GPU-a",)), gpu_slice("n2", ("GPU-a",))]
    assert _refused(two_nodes).startswith(
        "UUID GPU-a is published twice: device gpu-0 of pool n1 and device gpu-0 of pool n2"
    )
    assert _refused([gpu_slice("n1", ("GPU-a", "GPU-a"))]).startswith("UUID GPU-a is published twice")
    whole_and_cut = [gpu_slice("m1", ("GPU-p",)), {**mig_slice("m1b"), "metadata": {"name": "m1b"}}]
    assert _refused(whole_and_cut).startswith(
        "card GPU-p is published whole (device gpu-0 of pool m1) and cut into MIG slices"
    )


def test_a_card_cut_across_two_nodes_or_into_more_than_its_compute_is_refused():
    a, b = mig_slice("m1"), mig_slice("m2")
    for i, d in enumerate(b["spec"]["devices"]):
        d["attributes"]["uuid"] = {"string": f"MIG-b{i}"}
    assert _refused([a, b]) == "card GPU-p: its MIG slices are published on 2 nodes (m1, m2)"
    over = mig_slice()
    over["spec"]["devices"][2]["attributes"]["profile"] = {"string": "7g.80gb"}
    assert _refused([over]).endswith("take 9 compute slices of the card's 7")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda s: _with(s, generation=True), "spec.pool.generation: True is not a whole number from 0"),
        (lambda s: _with(s, generation=-1), "spec.pool.generation: -1 is not a whole number from 0"),
        (lambda s: _with(s, resourceSliceCount=1.0), "spec.pool.resourceSliceCount: 1.0 is not a whole number from 1"),
        (lambda s: _with(s, resourceSliceCount=None), "spec.pool.resourceSliceCount: None is not a whole number from 1"),
        (lambda s: s["spec"]["devices"][0].pop("name") and s, "a device without a name"),
        (lambda s: s["spec"]["devices"][0]["attributes"].update(uuid="GPU-a") or s, "attribute 'uuid': 'GPU-a' is not an object"),
        (lambda s: s["spec"]["devices"][0].update(attributes=[]) or s, "attributes: [] is not an object"),
        (lambda s: (s["spec"].pop("nodeName") and s["spec"].update(allNodes=True)) or s, "a GPU in a pool with no nodeName"),
        (lambda s: s["spec"].update(nodeName="") or s, "spec.nodeName '' is not a node's name"),
    ],
    ids=["generation-bool", "generation-negative", "count-float", "count-missing", "device-nameless",
         "attribute-bare-string", "attributes-list", "gpu-without-node", "node-empty"],
)  # fmt: skip
def test_a_slice_the_api_or_the_driver_would_not_write_is_refused_naming_it(change, said):
    assert said in _refused([change(gpu_slice())])


def test_slices_of_one_generation_disagreeing_on_their_count_are_refused():
    a, b = gpu_slice("n1", ("GPU-a",), count=2), gpu_slice("n1", ("GPU-b",), count=5)
    b["metadata"]["name"] = "n1-b"
    assert (
        _refused([a, b])
        == "pool n1 of gpu.nvidia.com: generation 1's slices disagree on its resourceSliceCount ([2, 5])"
    )


def test_a_device_allocated_twice_or_a_pod_listed_twice_or_a_shared_capacity_is_refused_naming_the_claim():
    both = [claim("c1", [("n1", "gpu-0")], ["p1"]), claim("c2", [("n1", "gpu-0")], ["p2"])]
    assert _refused([gpu_slice()], claims=both) == (
        "ResourceClaim team-a/c2: allocates device gpu-0 of pool n1, which ResourceClaim team-a/c1 allocates too; "
        "a device is held once"
    )
    twice = claim("c", [("n1", "gpu-0")], ["p1", "p1", "p2"])
    assert (
        _refused([gpu_slice()], claims=[twice])
        == "ResourceClaim team-a/c: a pod is listed twice in status.reservedFor (['p1', 'p1', 'p2'])"
    )
    nameless = claim("c", [("n1", "gpu-0")], ["p1"])
    nameless["status"]["reservedFor"].append({"resource": "pods"})
    assert "a pod in status.reservedFor without its name and uid" in _refused(
        [gpu_slice()], claims=[nameless]
    )
    shared = claim("c", [("n1", "gpu-0")], ["p1"])
    shared["status"]["allocation"]["devices"]["results"][0]["shareID"] = "abc"
    assert _refused([gpu_slice()], claims=[shared]).endswith(
        "allocates a share (abc) of device gpu-0's capacity, which is not read"
    )


def test_an_admin_access_result_holds_nothing():
    watcher = claim("watch", [("n1", "gpu-0")], ["monitor"])
    watcher["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    owner = claim("own", [("n1", "gpu-0")], ["p"])
    got = dra.reservations([watcher, owner], dra.installed([gpu_slice()]))
    assert [(r.claim, r.held.holder.pod) for r in got] == [("own", "p")]
