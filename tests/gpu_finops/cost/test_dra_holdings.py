"""A pod's GPUs held through Dynamic Resource Allocation, as the collector records them: the devices its
ResourceClaims allocate (asked through a claim template, or as nvidia.com/gpu served from DRA), each worth its
part of a card, its limits never read a second time."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gpu_finops.cost.gpu_holdings import (
    GpuHolding,
    holdings_from_data,
    holdings_from_objects,
)
from gpu_finops.model import dra
from local.sim import dra_driver
from tests.gpu_finops.cost.test_gpu_holdings import T, pod

UUIDS = ["GPU-a", "GPU-b", "GPU-c", "GPU-d"]


def claim(name, devices, pods, ns="team-a", node="dra-1"):
    return {"metadata": {"name": name, "namespace": ns},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": d} for d in devices]}},
                "reservedFor": [{"resource": "pods", "name": p, "uid": p} for p in pods]}}  # fmt: skip


def read(pods, claims, slices=None):
    devices = dra.installed(slices or [dra_driver.resource_slice("dra-1", "u", "g6e.12xlarge", UUIDS)])
    reserved = dra.by_pod(dra.reservations(claims, devices))
    return holdings_from_objects(pods, {"team-a": {"gpu-finops.io/tenant": "a"}}, {}, {}, None, reserved)


def test_a_claim_template_pod_holds_its_claims_devices_as_whole_cards_of_its_tenant():
    [h] = read(
        [pod("train", "team-a", node="dra-1", gpus=0)], [claim("train-gpu-x1", ["gpu-0", "gpu-2"], ["train"])]
    )
    assert (h.pod, h.node, h.tenant, h.gpus, h.equivalents, h.devices, h.claims) == (
        "train",
        "dra-1",
        "a",
        2,
        Fraction(2),
        ("GPU-a", "GPU-c"),
        ("train-gpu-x1",),
    )


def test_an_extended_resource_pod_served_by_dra_holds_its_claims_devices_not_its_limits_again():
    # it asks nvidia.com/gpu: 2; the scheduler's claim allocates one device (a near-miss of identity: the limit
    # alone would say 2 cards)
    [h] = read(
        [pod("infer", "team-a", node="dra-1", gpus=2)],
        [claim("infer-extended-resources-q", ["gpu-1"], ["infer"])],
    )
    assert (h.gpus, h.equivalents, h.devices, h.claims) == (
        1,
        Fraction(1),
        ("GPU-b",),
        ("infer-extended-resources-q",),
    )


def test_one_claim_shared_by_two_pods_splits_its_card_between_them():
    got = read(
        [pod("p1", "team-a", node="dra-1", gpus=0), pod("p2", "team-a", node="dra-1", gpus=0)],
        [claim("shared", ["gpu-3"], ["p1", "p2"])],
    )
    assert [(h.pod, h.equivalents, h.devices) for h in got] == [
        ("p1", Fraction(1, 2), ("GPU-d",)),
        ("p2", Fraction(1, 2), ("GPU-d",)),
    ]


def test_a_claim_allocating_a_device_of_another_node_than_its_pods_is_refused_naming_the_pod():
    slices = [
        dra_driver.resource_slice("dra-1", "u", "g6e.12xlarge", UUIDS),
        dra_driver.resource_slice("dra-2", "v", "g6e.12xlarge", ["GPU-e"]),
    ]
    with pytest.raises(dra.DraReadError) as err:
        read(
            [pod("train", "team-a", node="dra-1", gpus=0)],
            [claim("c", ["gpu-0"], ["train"], node="dra-2")],
            slices,
        )
    assert str(err.value) == (
        "pod team-a/train on node dra-1: its claims allocate device(s) of another node (GPU-e on dra-2)"
    )


def test_a_pod_not_started_or_a_claim_reserved_for_no_pod_holds_nothing():
    not_started = pod("waiting", "team-a", node="dra-1", gpus=0, started=None, phase="Pending")
    idle_claim = {**claim("idle", ["gpu-0"], []), "metadata": {"name": "idle", "namespace": "team-a"}}
    assert read([not_started], [claim("w", ["gpu-1"], ["waiting"]), idle_claim]) == []


def test_a_dra_holding_keeps_its_claims_through_the_holdings_file():
    h = GpuHolding(
        "team-a",
        "a",
        "train",
        "dra-1",
        1,
        T,
        devices=("GPU-a",),
        equivalents=Fraction(1, 2),
        claims=("shared",),
    )
    assert holdings_from_data([h.to_dict()], "holdings.json") == [h]


def test_a_claim_reserved_for_an_earlier_pod_of_the_same_name_is_not_the_new_pod_s():
    again = pod("train", "team-a", node="dra-1", gpus=0)
    again.metadata.uid = "uid-new"
    old = claim("train-gpu-old", ["gpu-0"], ["train"])  # reservedFor uid "train": the earlier pod's
    assert read([again], [old]) == []
    again.metadata.uid = "train"
    assert [h.claims for h in read([again], [old])] == [("train-gpu-old",)]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"equivalents": None}, "without its devices' worth (equivalents)"),
        ({"claims": ["c", "c"]}, "with a claim twice"),
        ({"resources": {"nvidia.com/gpu": 1}}, "or with resources as well"),
    ],
    ids=["no-equivalents", "claim-twice", "resources-too"],
)
def test_a_holdings_file_entry_through_claims_that_no_collector_writes_is_refused(change, said):
    from gpu_finops.facts.errors import ConfigError

    h = GpuHolding(
        "team-a", "a", "train", "dra-1", 1, T, devices=("GPU-a",), equivalents=Fraction(1), claims=("c",)
    )
    with pytest.raises(ConfigError) as err:
        holdings_from_data([{**h.to_dict(), **change}], "holdings.json")
    assert said in str(err.value)


def test_a_running_pod_whose_own_claim_is_reserved_for_another_uid_is_refused_naming_both():
    from kubernetes import client

    again = pod("train", "team-a", node="dra-1", gpus=0)
    again.metadata.uid = "uid-new"
    again.status.resource_claim_statuses = [
        client.V1PodResourceClaimStatus(name="gpu", resource_claim_name="train-gpu-old")
    ]
    with pytest.raises(dra.DraReadError) as err:
        read([again], [claim("train-gpu-old", ["gpu-0"], ["train"])])
    assert str(err.value) == (
        "pod team-a/train (UID uid-new) references ResourceClaim(s) train-gpu-old, which are reserved for another pod of its name"
    )
