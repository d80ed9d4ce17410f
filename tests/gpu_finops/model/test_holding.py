"""A held GPU: device -> holder -> share, for a whole card and a time-sliced replica."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gpu_finops.model import holding as h

CARD = "GPU-8a3d6b0e-1111-2222-3333-444455556666"


@pytest.mark.parametrize(
    "device_id, card, kind, replica",
    [
        (CARD, CARD, h.Kind.WHOLE, None),
        (f"{CARD}::3", CARD, h.Kind.REPLICA, "3"),
        (f"{CARD}::", CARD, h.Kind.REPLICA, ""),
    ],
)
def test_a_device_id_names_its_physical_card_and_kind(device_id, card, kind, replica):
    assert h.device(device_id) == h.Device(device_id, card, kind, replica)
    assert h.card_of(device_id) == card


def test_cards_are_the_distinct_physical_cards_behind_devices():
    assert h.cards([f"{CARD}::0", f"{CARD}::1", "GPU-b", ""]) == {CARD, "GPU-b"}


@pytest.mark.parametrize(
    "replicas, share", [(1, Fraction(1)), (4, Fraction(1, 4)), (0, Fraction(1)), (-2, Fraction(1))]
)
def test_a_device_is_worth_one_replicas_share_of_its_card(replicas, share):
    assert h.share(replicas) == share
    assert h.physical_gpus(2, replicas) == 2 * share


def test_a_pods_devices_are_held_with_their_shares_and_summed_per_card():
    alice, bob = h.Holder("team-a", "p1", "team-a"), h.Holder("team-b", "p2", "team-b")
    held = h.held(alice, [f"{CARD}::0", "GPU-b"], replicas=4) + h.held(bob, [f"{CARD}::1"], replicas=4)
    assert [(x.card, x.holder.pod, x.share) for x in held] == [
        (CARD, "p1", Fraction(1, 4)),
        ("GPU-b", "p1", Fraction(1)),
        (CARD, "p2", Fraction(1, 4)),
    ]
    assert h.card_shares(held) == {CARD: Fraction(1, 2), "GPU-b": Fraction(1)}
