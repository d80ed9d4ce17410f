"""A held GPU: device -> holder -> share, for a whole card and a time-sliced replica."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from gpu_finops.model import holding as h

CARD = "GPU-8a3d6b0e-1111-2222-3333-444455556666"


@pytest.mark.parametrize(
    "device_id, card, kind, replica",
    [
        (CARD, CARD, h.Kind.WHOLE, None),
        (f"{CARD}::3", CARD, h.Kind.REPLICA, "3"),
        (f"{CARD}::0", CARD, h.Kind.REPLICA, "0"),
    ],
)
def test_a_device_id_names_its_physical_card_and_kind(device_id, card, kind, replica):
    assert h.device(device_id) == h.Device(device_id, card, kind, replica)
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
        ("MIG-1234", "names no card"),
        ("MIG-x::0", "names no card"),
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
        h.held(h.Holder("team-a", "p"), [f"{CARD}::4"], replicas=4)


def test_a_pods_devices_are_held_with_their_shares_and_summed_per_card():
    alice, bob = h.Holder("team-a", "p1", "team-a"), h.Holder("team-b", "p2", "team-b")
    held = (
        h.held(alice, [f"{CARD}::0"], replicas=4)
        + h.held(alice, ["GPU-b"], replicas=1)  # a whole card on another node
        + h.held(bob, [f"{CARD}::1"], replicas=4)
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
