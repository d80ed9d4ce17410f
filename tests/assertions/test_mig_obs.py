"""Act 8's observation refuses what no checker could read: a verdict, never a TypeError, from bad fields."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import find, settings

from assertions.mig import Billed, check_mig
from tests.assertions.near_misses import act8

WORLD = find(act8.holding(), lambda _w: True, settings=settings(database=None, derandomize=True))


def test_the_simplest_world_holds_and_its_billed_interval_is_ten_seconds():
    v = check_mig(WORLD)
    assert v.holds, v.render()
    assert WORLD.interval_s == Fraction(10)


@pytest.mark.parametrize(
    "change, why",
    [
        ({"cards": None}, "cards None"),
        ({"card_usd": Decimal("sNaN")}, "card_usd Decimal('sNaN')"),
        ({"usd_per_hour": 3.44}, "usd_per_hour 3.44"),
        ({"billed": (Billed("team-a", "ns-team-a", Fraction(1), None),)}, "billed row team-a: Fraction(1, 1) GPU-seconds, None dollars"),  # type: ignore[arg-type]
        ({"billed": (Billed("team-a", "ns-team-a", None, Decimal(1)),)}, "billed row team-a: None GPU-seconds"),  # type: ignore[arg-type]
        ({"layout": {"1g.10gb": None}}, "layout 1g.10gb: None"),
    ],
)  # fmt: skip
def test_a_field_no_clause_can_read_is_refused_naming_it(change, why):
    with pytest.raises(ValueError) as err:
        replace(WORLD, **change)
    assert why in str(err.value), str(err.value)


def test_an_ask_of_no_mig_profile_is_refused_naming_the_pod():
    ask = next(iter(WORLD.asks))
    with pytest.raises(ValueError, match=f"ask {ask}: profile 'bogus'"):
        replace(WORLD, asks={**WORLD.asks, ask: replace(WORLD.asks[ask], profile="bogus")})
    with pytest.raises(ValueError, match=f"ask {ask}: profile '8g.80gb'"):  # a card has 7 compute slices
        replace(WORLD, asks={**WORLD.asks, ask: replace(WORLD.asks[ask], profile="8g.80gb")})


def test_a_card_cut_into_two_3g_slices_is_billed_half_each_as_the_collector_prices_it_not_three_sevenths():
    from gpu_finops.cost.allocation import split

    right = act8.world("all-3g.40gb", [("team-a", "3g.40gb"), ("team-b", "3g.40gb")], 10, [10, 11])
    assert check_mig(right).holds, check_mig(right).render()
    # the same card billed by compute slices over the card's 7: 3/7 each, 1/7 left unallocated
    shares = [Fraction(30, 7), Fraction(30, 7), Fraction(10, 7)]
    money = split(right.card_usd, [s / 10 for s in shares])
    keys = [("team-a", "ns-team-a"), ("team-b", "ns-team-b"), ("unallocated", None)]
    sevenths = replace(
        right, billed=tuple(Billed(k[0], k[1], s, m) for k, s, m in zip(keys, shares, money, strict=True))
    )
    v = check_mig(sevenths)
    assert v.failed_clauses == ("each_tenant_billed_its_slices_share_of_the_card",)
    assert "tenant team-a in ns-team-a billed 4.28571 GPU-seconds, its slices are 5" in v.observed
    assert right.card_usd > Decimal(0)


def test_pods_named_by_their_cards_ids_on_dcgms_gpu_instances_hold():
    """The device plugin's card-named ids (MIG-<card>/<gi>/<ci>) read against DCGM's GPU_I_ID: the same slices."""
    named = act8.legacy_ids(WORLD, lambda i, s: s.instance)
    assert all(p.devices[0].startswith("MIG-GPU-1111/") for p in named.pods)
    v = check_mig(named)
    assert v.holds, v.render()
