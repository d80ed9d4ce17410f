"""A held GPU: device -> holder -> share, for a whole card, a time-sliced replica, an MPS client and a MIG slice."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from gpu_finops.model import holding as h

CARD = "GPU-8a3d6b0e-1111-2222-3333-444455556666"


@pytest.mark.parametrize(
    "device_id, card, kind, replica, instances",
    [
        (CARD, CARD, h.Kind.WHOLE, None, (None, None)),
        (f"{CARD}::3", CARD, h.Kind.REPLICA, "3", (None, None)),
        (f"{CARD}::0", CARD, h.Kind.REPLICA, "0", (None, None)),
        (f"MIG-{CARD}/3/0", CARD, h.Kind.MIG_SLICE, None, ("3", "0")),
        (f"MIG-{CARD}/13/1::2", CARD, h.Kind.MIG_SLICE, "2", ("13", "1")),
        (CARD[:4] + CARD[4:].upper(), CARD, h.Kind.WHOLE, None, (None, None)),
        (f"MIG-{CARD[:4]}{CARD[4:].upper()}/1/0", CARD, h.Kind.MIG_SLICE, None, ("1", "0")),
    ],
)
def test_a_device_id_names_its_physical_card_kind_and_instances(device_id, card, kind, replica, instances):
    """A card's UUID in upper case is the same card (a UUID is one value in either case)."""
    assert h.device(device_id) == h.Device(device_id, card, kind, replica, *instances)
    assert h.card_of(device_id) == card


@pytest.mark.parametrize(
    "device_id, why",
    [
        ("", "names no card"),
        (" ", "names no card"),
        (f" {CARD}", "names no card"),
        ("::0", "names no card"),
        (f"{CARD}::", "replica index '' is not a plain decimal from 0"),
        (f"{CARD}::01", "replica index '01' is not a plain decimal from 0"),
        (f"{CARD}::-1", "replica index '-1' is not a plain decimal from 0"),
        (f"{CARD}::1::2", "replica index '1::2' is not a plain decimal from 0"),
        (f"{CARD}:::1", "replica index ':1' is not a plain decimal from 0"),
        (f"{CARD}::1234567", "replica index '1234567' is not a plain decimal from 0"),
        ("foo", "names no card"),
        ("MIG-", "names no card"),
        ("MIG-GPU-a/1", "names no card"),
        ("MIG-GPU-a/01/0", "names no card"),
        ("MIG-GPU-a/1/0/2", "names no card"),
        ("MIG-a b", "names no card"),
        ("MIG-a::01", "replica index '01' is not a plain decimal from 0"),
        ("GPU a b", "names no card"),
        ("GPU-a\nGPU-b", "names no card"),
        ("GPU-a\u200b", "names no card"),
        ("GPU-a:1", "names no card"),
        ("GPU-a:b::1", "names no card"),
        (":", "names no card"),
        ("GPU-", "names no card"),
        (None, "is a NoneType, not text"),
        (5, "is a int, not text"),
    ],
)
def test_a_device_id_the_device_plugin_would_not_write_is_refused_naming_it(device_id, why):
    with pytest.raises(h.DeviceIdError) as err:
        h.device(device_id)
    assert repr(device_id) in str(err.value) and why in str(err.value), str(err.value)
    with pytest.raises(h.DeviceIdError):
        h.cards([f"{CARD}::0", device_id])


def test_one_id_given_where_a_sequence_of_ids_is_expected_is_refused_not_read_as_its_characters():
    with pytest.raises(TypeError, match="expected a tuple or list of ids, not a str"):
        h.cards("GPU-abc")
    with pytest.raises(TypeError, match="expected a tuple or list of ids, not a str"):
        h.held(h.Holder("team-a", "p"), "GPU-a", 1)


def test_cards_are_the_distinct_physical_cards_behind_devices():
    assert h.cards([f"{CARD}::0", f"{CARD}::1", "GPU-b"]) == {CARD, "GPU-b"}


@pytest.mark.parametrize("replicas, share", [(1, Fraction(1)), (4, Fraction(1, 4)), (8, Fraction(1, 8))])
def test_a_device_is_worth_one_replicas_share_of_its_card(replicas, share):
    assert h.share(replicas) == share
    assert h.physical_gpus(2, replicas) == 2 * share


@pytest.mark.parametrize("replicas", [0, -2, True, 1.5, "4", None])
def test_a_card_advertised_as_anything_but_a_whole_number_from_one_is_refused(replicas):
    with pytest.raises(
        ValueError, match=rf"replicas per card {re.escape(repr(replicas))}: a card is advertised"
    ):
        h.share(replicas)
    with pytest.raises(ValueError, match="a card is advertised as 1 or more devices"):
        h.held(h.Holder("team-a", "p"), [CARD], replicas)  # whole cards too
    with pytest.raises(ValueError, match="a card is advertised as 1 or more devices"):
        h.held(h.Holder("team-a", "p"), [], replicas)


@pytest.mark.parametrize("devices", [-3, True, 1.5])
def test_a_count_of_allocated_devices_is_a_whole_number_from_zero(devices):
    with pytest.raises(ValueError, match=rf"allocated devices {re.escape(repr(devices))}: a count from 0"):
        h.physical_gpus(devices, 4)


@pytest.mark.parametrize(
    "labels, replicas",
    [({}, 1), ({"nvidia.com/gpu.replicas": "4"}, 4), ({"nvidia.com/gpu.replicas": "0"}, 1),
     ({"nvidia.com/gpu.replicas": "four"}, 1), ({"nvidia.com/gpu.replicas": "-4"}, 1),
     ({"nvidia.com/gpu.replicas": "04"}, 1), ({"nvidia.com/gpu.replicas": "\uff14"}, 1),
     ({"nvidia.com/gpu.replicas": "1" * 20}, 1), ({"nvidia.com/gpu.replicas": "16"}, 16)],
)  # fmt: skip
def test_a_nodes_replicas_per_card_is_its_gfd_label_else_whole_cards(labels, replicas):
    assert h.replicas_per_card(labels) == replicas


def test_a_replica_index_the_node_does_not_advertise_is_refused():
    with pytest.raises(h.DeviceIdError, match=r"replica 4 on a node advertising 4 per card \(indexes 0..3\)"):
        h.held(h.Holder("team-a", "p"), [f"{CARD}::4"], 4)


def test_a_pods_devices_are_held_with_their_shares_and_summed_per_card():
    alice, bob = h.Holder("team-a", "p1", "team-a"), h.Holder("team-b", "p2", "team-b")
    held = (
        h.held(alice, [f"{CARD}::0"], 4)
        + h.held(alice, ["GPU-b"], 1)  # a whole card on another node
        + h.held(bob, [f"{CARD}::1"], 4)
    )
    assert [(x.card, x.holder.pod, x.share) for x in held] == [
        (CARD, "p1", Fraction(1, 4)),
        ("GPU-b", "p1", Fraction(1)),
        (CARD, "p2", Fraction(1, 4)),
    ]
    assert h.card_shares(held) == {CARD: Fraction(1, 2), "GPU-b": Fraction(1)}


@pytest.mark.parametrize(
    "device_ids, replicas, why",
    [
        ([f"{CARD}::0", f"{CARD}::0"], 4, "given to team-a/p twice"),
        ([CARD], 4, "a whole card on a node advertising 4 device(s) per card (expected GPU-<uuid>::<n>)"),
        (
            [f"{CARD}::0"],
            1,
            "a time-sliced replica on a node advertising 1 device(s) per card (expected GPU-<uuid>)",
        ),
        ([CARD, f"{CARD}::0"], 4, "a whole card on a node advertising 4"),
    ],
)
def test_what_the_kubelet_would_not_give_one_pod_on_such_a_node_is_refused(device_ids, replicas, why):
    with pytest.raises(h.DeviceIdError, match=re.escape(why)):
        h.held(h.Holder("team-a", "p"), device_ids, replicas)


SLICE = "MIG-5e8b9d1c-aaaa-bbbb-cccc-ddddeeeeffff"


def test_a_mig_slice_named_by_its_own_uuid_is_a_slice_whose_card_the_id_does_not_say():
    assert h.device(SLICE) == h.Device(SLICE, None, h.Kind.MIG_SLICE)
    assert h.device(f"{SLICE}::1") == h.Device(f"{SLICE}::1", None, h.Kind.MIG_SLICE, "1")
    with pytest.raises(
        h.DeviceIdError, match="is a MIG slice named by its own UUID: its card is not in the id"
    ):
        h.card_of(SLICE)


H100 = {"karpenter.k8s.aws/instance-gpu-count": "8", "node.kubernetes.io/instance-type": "p5.48xlarge"}


def mixed(**capacity: str) -> h.NodeGpus:
    return h.node_gpus(
        {**H100, "nvidia.com/mig.strategy": "mixed"},
        {f"nvidia.com/mig-{k.replace('_', '.')}": v for k, v in capacity.items()} | {"cpu": "192"},
    )


def test_whole_cards_are_worth_one_and_sum_to_the_cards():
    node = h.node_gpus({"nvidia.com/gpu.count": "4"}, {"nvidia.com/gpu": "4"})
    assert (node.cards, node.sharing, node.advertised) == (4, h.Sharing.NONE, 4)
    assert node.offer("nvidia.com/gpu").kind is h.Kind.WHOLE
    assert node.equivalents({"nvidia.com/gpu": 3}) == 3


@pytest.mark.parametrize(
    "strategy, kind, sharing",
    [("time-slicing", h.Kind.REPLICA, h.Sharing.TIME_SLICING), ("mps", h.Kind.MPS_CLIENT, h.Sharing.MPS)],
)
def test_replicas_time_sliced_or_mps_clients_are_each_one_replicas_share(strategy, kind, sharing):
    labels = {
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": strategy,
    }
    node = h.node_gpus(labels, {"nvidia.com/gpu.shared": "4"})
    offer = node.offer("nvidia.com/gpu.shared")
    assert (node.sharing, offer.kind, offer.share, offer.label) == (
        sharing,
        kind,
        Fraction(1, 4),
        f"{kind} 1/4",
    )
    assert node.advertised == node.cards == 1
    held = h.held(h.Holder("team-a", "p"), ["GPU-a::3"], offer)
    assert [(x.kind, x.share) for x in held] == [(kind, Fraction(1, 4))]


def test_mig_single_slices_each_are_the_cards_over_the_slices():
    labels = {**H100, "nvidia.com/mig.strategy": "single", "nvidia.com/gpu.count": "56",
              "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"}  # fmt: skip
    node = h.node_gpus(labels, {"nvidia.com/gpu": "56"})
    offer = node.offer("nvidia.com/gpu")
    assert node.cards == 8, "GFD's count is the slices under MIG single, not the cards"
    assert (offer.kind, offer.profile, offer.share) == (
        h.Kind.MIG_SLICE,
        h.MigProfile("1g.10gb", 1, 10),
        Fraction(1, 7),
    )
    assert node.advertised == 8 and offer.label == "MIG slice 1g.10gb"


@pytest.mark.parametrize(
    "capacity, shares",
    [
        ({"1g_10gb": "56"}, {"1g.10gb": Fraction(1, 7)}),
        ({"3g_40gb": "16"}, {"3g.40gb": Fraction(1, 2)}),  # 2 of 7 compute slices a card stranded, priced in
        ({"1g_20gb": "32"}, {"1g.20gb": Fraction(1, 4)}),
        ({"4g_40gb": "8", "3g_40gb": "8"}, {"4g.40gb": Fraction(4, 7), "3g.40gb": Fraction(3, 7)}),
        ({"7g_80gb": "4", "1g_10gb": "28"}, {"7g.80gb": Fraction(1), "1g.10gb": Fraction(1, 7)}),
        ({"1g_10gb_me": "8", "1g_10gb": "48"}, {"1g.10gb.me": Fraction(1, 7), "1g.10gb": Fraction(1, 7)}),
    ],
)
def test_a_mig_slice_is_its_compute_over_the_nodes_slices_and_the_slices_sum_to_the_cards(capacity, shares):
    node = mixed(**capacity)
    assert {o.profile.name: o.share for o in node.offers.values()} == shares
    assert node.advertised == node.cards == 8
    assert node.sharing is h.Sharing.MIG_MIXED


def test_mig_mixed_cards_left_whole_are_worth_one_and_the_rest_are_cut():
    node = h.node_gpus(
        {**H100, "nvidia.com/mig.strategy": "mixed"}, {"nvidia.com/gpu": "4", "nvidia.com/mig-1g.10gb": "28"}
    )
    assert node.offer("nvidia.com/gpu").share == 1 and node.offer("nvidia.com/mig-1g.10gb").share == Fraction(
        1, 7
    )
    assert node.advertised == 8
    assert node.equivalents({"nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 2}) == Fraction(9, 7)


def test_mig_slices_held_are_checked_against_the_offer():
    offer = mixed(**{"1g_10gb": "56"}).offer("nvidia.com/mig-1g.10gb")
    pod = h.Holder("team-a", "p", "team-a")
    assert [(x.kind, x.share, x.card) for x in h.held(pod, [SLICE], offer)] == [
        (h.Kind.MIG_SLICE, Fraction(1, 7), None)
    ]
    with pytest.raises(
        h.DeviceIdError, match=r"a whole card where the node advertises nvidia.com/mig-1g.10gb as MIG slices"
    ):
        h.held(pod, [CARD], offer)
    with pytest.raises(
        h.DeviceIdError, match=r"a replica of a MIG slice on a node advertising 1 device\(s\) per slice"
    ):
        h.held(pod, [f"{SLICE}::0"], offer)
    with pytest.raises(
        h.DeviceIdError, match=r"a MIG slice where the node advertises nvidia.com/gpu as whole cards"
    ):
        h.held(pod, [SLICE], 1)


@pytest.mark.parametrize(
    "labels, capacity, why",
    [
        ({"nvidia.com/mig.strategy": "mixed"}, {"nvidia.com/mig-1g.10gb": "7"},
         "a MIG node (nvidia.com/mig.strategy=mixed) without karpenter.k8s.aws/instance-gpu-count"),
        ({"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.count": "7"}, {"nvidia.com/gpu": "7"},
         "without karpenter.k8s.aws/instance-gpu-count or a known instance type: its physical cards are unknown"),
        ({**H100, "nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-INVALID"},
         {"nvidia.com/gpu": "0"}, "names no MIG profile"),
        ({**H100, "nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
         {"nvidia.com/gpu": "8"}, "names no MIG profile"),
        ({**H100, "nvidia.com/mig.strategy": "mixed"}, {"nvidia.com/mig-9g.10gb": "7"},
         "MIG profile '9g.10gb': expected <g>g.<memory>gb"),
        ({**H100, "nvidia.com/mig.strategy": "mixed"}, {"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": "7"},
         "no card left to cut the slices from"),
        ({"nvidia.com/gpu.count": "1"}, {"nvidia.com/gpu": "1.5"}, "capacity nvidia.com/gpu '1.5' is not a whole number"),
        ({}, {"nvidia.com/gpu": "-1"}, "capacity nvidia.com/gpu '-1' is not a whole number"),
        ({"nvidia.com/gpu.replicas": "4"}, {"nvidia.com/gpu": "6"}, "6 GPU devices advertised is not a whole number of cards of 4"),
    ],
)  # fmt: skip
def test_a_node_whose_cards_cannot_be_read_is_refused_naming_what_is_missing(labels, capacity, why):
    with pytest.raises(h.NodeGpusError, match=re.escape(why)):
        h.node_gpus(labels, capacity)


def test_an_advertised_resource_the_node_does_not_offer_is_named():
    node = h.node_gpus({"nvidia.com/gpu.count": "1"}, {"nvidia.com/gpu": "1"})
    with pytest.raises(
        h.NodeGpusError,
        match=r"the node advertises no nvidia.com/mig-1g.10gb \(it advertises \['nvidia.com/gpu'\]\)",
    ):
        node.equivalents({"nvidia.com/mig-1g.10gb": 1})


K8 = {"karpenter.k8s.aws/instance-gpu-count": "8"}


@pytest.mark.parametrize(
    "labels, capacity, why",
    [
        # MIG profiles as resources are the mixed strategy's; other strategy values are not GFD's
        (K8, {"nvidia.com/mig-1g.10gb": "56"}, "without nvidia.com/mig.strategy=mixed (it is absent)"),
        ({**K8, "nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "X-MIG-1g.10gb"},
         {"nvidia.com/gpu": "56", "nvidia.com/mig-3g.40gb": "2"}, "without nvidia.com/mig.strategy=mixed (it is single)"),
        ({**K8, "nvidia.com/mig.strategy": "Mixed"}, {"nvidia.com/mig-1g.10gb": "56"}, "expected single or mixed"),
        ({**K8, "nvidia.com/mig.strategy": "none"}, {"nvidia.com/gpu": "8"}, "expected single or mixed"),
        # devices that do not add up to the cards
        ({**K8, "nvidia.com/gpu.sharing-strategy": "time-slicing"}, {"nvidia.com/gpu": "32"},
         "time-slicing with nvidia.com/gpu.replicas=1"),
        ({**K8, "nvidia.com/gpu.replicas": "4"}, {"nvidia.com/gpu": "8"}, "are worth 2 cards, not its 8"),
        (K8, {"nvidia.com/gpu": "4"}, "are worth 4 cards, not its 8"),
        ({**K8, "nvidia.com/gpu.replicas": "4"}, {"nvidia.com/gpu": "8", "nvidia.com/gpu.shared": "32"}, "are worth 10 cards"),
        ({"nvidia.com/gpu.count": "1"}, {"nvidia.com/gpu": "1", "nvidia.com/gpu.sharedX": "4"},
         "capacity nvidia.com/gpu.sharedX: a GPU resource this model does not read"),
        # labels GFD would not write are refused, never read as whole cards
        ({**K8, "nvidia.com/gpu.replicas": "04"}, {"nvidia.com/gpu": "32"}, "label nvidia.com/gpu.replicas='04'"),
        ({**K8, "nvidia.com/gpu.replicas": "\uff14"}, {"nvidia.com/gpu": "32"}, "label nvidia.com/gpu.replicas="),
        ({**K8, "nvidia.com/gpu.replicas": 4}, {"nvidia.com/gpu": "32"}, "label nvidia.com/gpu.replicas=4"),
        ({"karpenter.k8s.aws/instance-gpu-count": "eight"}, {"nvidia.com/gpu": "8"}, "instance-gpu-count='eight'"),
        # counts that do not divide into cards or slices
        ({"karpenter.k8s.aws/instance-gpu-count": "4", "nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.replicas": "2"},
         {"nvidia.com/gpu": "3", "nvidia.com/mig-1g.10gb": "21"}, "3 whole-card devices is not a whole number of cards of 2"),
        ({"karpenter.k8s.aws/instance-gpu-count": "1", "nvidia.com/mig.strategy": "mixed",
          "nvidia.com/mig-1g.10gb.replicas": "2"}, {"nvidia.com/mig-1g.10gb": "7"}, "is not a whole number of slices of 2"),
        ({"karpenter.k8s.aws/instance-gpu-count": "1", "nvidia.com/mig.strategy": "mixed"},
         {"nvidia.com/mig-1g.10gb.shared.x": "7"}, "MIG profile '1g.10gb.shared.x'"),
        # odd types
        (K8, {5: "8"}, "capacity key 5 is not a resource name"),
        (K8, {"nvidia.com/gpu": True}, "capacity nvidia.com/gpu True is not a whole number"),
    ],
)  # fmt: skip
def test_a_node_whose_labels_and_capacity_disagree_is_refused_naming_what(labels, capacity, why):
    with pytest.raises(h.NodeGpusError, match=re.escape(why)):
        h.node_gpus(labels, capacity)


@pytest.mark.parametrize("cards", [-2, True, "8", 1.0])
def test_known_cards_are_a_whole_number_from_zero(cards):
    with pytest.raises(h.NodeGpusError, match=re.escape(f"cards {cards!r}: a whole number from 0")):
        h.node_gpus({}, {"nvidia.com/gpu": "8"}, cards)


def test_mig_mixed_with_renamed_shares_prices_whole_replicas_and_slices_each_at_their_share():
    # two cards: one left whole as 4 renamed replicas, one cut into seven 1g slices
    node = h.node_gpus(
        {"karpenter.k8s.aws/instance-gpu-count": "2", "nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.replicas": "4"},
        {"nvidia.com/gpu.shared": "4", "nvidia.com/mig-1g.10gb": "7"},
    )  # fmt: skip
    assert {r: o.share for r, o in node.offers.items()} == {
        "nvidia.com/gpu.shared": Fraction(1, 4), "nvidia.com/mig-1g.10gb": Fraction(1, 7)
    }  # fmt: skip
    # GFD labels a renamed profile's replicas under the profile's own name (internal/lm/resource.go)
    shared = h.node_gpus(
        {"karpenter.k8s.aws/instance-gpu-count": "1", "nvidia.com/mig.strategy": "mixed",
         "nvidia.com/mig-1g.10gb.replicas": "2"},
        {"nvidia.com/mig-1g.10gb.shared": "8", "nvidia.com/mig-3g.40gb": "1"},
    )  # fmt: skip
    assert {r: (o.share, o.replicas) for r, o in shared.offers.items()} == {
        "nvidia.com/mig-1g.10gb.shared": (Fraction(1, 14), 2), "nvidia.com/mig-3g.40gb": (Fraction(3, 7), 1)
    }  # fmt: skip


def test_mig_single_time_sliced_slices_read_the_profile_before_gfds_shared_suffix():
    node = h.node_gpus(
        {**K8, "nvidia.com/mig.strategy": "single", "nvidia.com/gpu.replicas": "2",
         "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-SHARED"},
        {"nvidia.com/gpu": "112"},
    )  # fmt: skip
    offer = node.offer("nvidia.com/gpu")
    assert (offer.profile.name, offer.replicas, offer.share, node.advertised) == (
        "1g.10gb",
        2,
        Fraction(1, 14),
        8,
    )


def test_under_mig_mixed_gfds_count_is_the_cards():
    node = h.node_gpus({"nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "0"},
                       {"nvidia.com/mig-1g.10gb": "56"})  # fmt: skip
    assert node.cards == 8 and node.advertised == 8


@pytest.mark.parametrize(
    "requests, why",
    [
        ({"nvidia.com/gpu": -3}, "-3 devices of nvidia.com/gpu: a count is a whole number from 0"),
        ({"nvidia.com/gpu": 0.5}, "0.5 devices of nvidia.com/gpu"),
        ({"nvidia.com/gpu": True}, "True devices of nvidia.com/gpu"),
        ({"nvidia.com/gpu": 100}, "100 nvidia.com/gpu on a node that advertises 8"),
    ],
)
def test_equivalents_of_counts_no_pod_could_hold_are_refused(requests, why):
    node = h.node_gpus(K8, {"nvidia.com/gpu": "8"})
    with pytest.raises(h.NodeGpusError, match=re.escape(why)):
        node.equivalents(requests)


def test_a_gpu_held_on_a_node_with_no_cards_is_refused():
    with pytest.raises(h.NodeGpusError, match="2 nvidia.com/gpu on a node with no GPU cards"):
        h.node_gpus({}, {}).equivalents({"nvidia.com/gpu": 2})


def test_a_nodes_cards_alone_are_read_without_its_devices_adding_up():
    assert h.node_cards(K8, {"nvidia.com/gpu": "4"}) == 8  # the collector prices the 8 cards bought
    with pytest.raises(h.NodeGpusError, match="are worth 4 cards, not its 8"):
        h.node_gpus(K8, {"nvidia.com/gpu": "4"})


def test_a_node_of_a_catalogued_type_reads_its_cards_from_the_catalog_and_errors_name_the_node():
    labels = {
        "node.kubernetes.io/instance-type": "p5.48xlarge",
        "nvidia.com/mig.strategy": "mixed",
    }
    capacity = {"nvidia.com/mig-1g.10gb": "56"}
    assert h.catalog_cards(labels) == 8
    assert h.read_node_cards("gpu-a", labels, capacity) == 8
    assert h.read_node("gpu-a", labels, capacity).equivalents({"nvidia.com/mig-1g.10gb": 7}) == 1
    unknown = {**labels, "node.kubernetes.io/instance-type": "x9.large"}
    assert h.catalog_cards(unknown) is None
    with pytest.raises(
        h.NodeGpusError, match=r"^node gpu-a: a MIG node \(nvidia.com/mig.strategy=mixed\) without"
    ):
        h.read_node("gpu-a", unknown, capacity)
    with pytest.raises(h.NodeGpusError, match=r"^node gpu-b: a MIG node"):
        h.read_node_cards("gpu-b", unknown, capacity)
