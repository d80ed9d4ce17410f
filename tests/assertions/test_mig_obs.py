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
