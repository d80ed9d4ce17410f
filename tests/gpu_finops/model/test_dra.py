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
        "ResourceSlice n1-gpu.nvidia.com device 'gpu-0': taints 'NoSchedule' is not a list of taints"
    )


def test_a_claim_whose_reserved_for_is_not_a_list_of_consumers_is_refused_naming_the_claim():
    c = claim("c", [("n1", "gpu-0")], ["p"])
    c["status"]["reservedFor"] = {"resource": "pods", "name": "p"}
    with pytest.raises(dra.DraReadError) as err:
        dra.reservations([c], dra.installed([gpu_slice()]))
    assert str(err.value).startswith("ResourceClaim team-a/c: status.reservedFor {")


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
