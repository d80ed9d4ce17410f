"""The per-tenant split: shares by GPU-seconds, and an exact largest-remainder split of the money."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from fractions import Fraction

import pytest

from gpu_finops.cost.allocation import MONEY_QUANTUM, UNALLOCATED, shares, split, to_decimal
from gpu_finops.cost.focus import focus_dataset, node_rows
from tests.gpu_finops.cost.focus_fixtures import CTX, T0, hold, record

END = T0 + timedelta(seconds=60)
ONE_GPU_MINUTE = Fraction(60)


def by_tenant(parts) -> dict[str, Fraction]:
    return {s.tenant: s.weight for s in parts}


@pytest.mark.parametrize(
    ("case", "gpus", "holdings", "expected"),
    [
        (
            "two tenants share a two-GPU node, one card each",
            2,
            [hold("team-a"), hold("team-b")],
            {"team-a": Fraction(1, 2), "team-b": Fraction(1, 2)},
        ),
        (
            "time-sliced replicas: three of four replicas of one card",
            1,
            [
                hold("team-a", pod="a1", replicas=4),
                hold("team-a", pod="a2", replicas=4),
                hold("team-b", replicas=4),
            ],
            {"team-a": Fraction(1, 2), "team-b": Fraction(1, 4), UNALLOCATED: Fraction(1, 4)},
        ),
        ("nobody holding", 1, [], {UNALLOCATED: Fraction(1)}),
        (
            "a pod holding half the interval",
            1,
            [hold("team-a", start=T0 + timedelta(seconds=30))],
            {"team-a": Fraction(1, 2), UNALLOCATED: Fraction(1, 2)},
        ),
        (
            "a pod that finished before the interval holds nothing of it",
            1,
            [hold("team-a", end=T0), hold("team-b", end=T0 + timedelta(seconds=20))],
            {"team-b": Fraction(1, 3), UNALLOCATED: Fraction(2, 3)},
        ),
        (
            "a pod on another node holds nothing of this one",
            1,
            [hold("team-a", node="gpu-b")],
            {UNALLOCATED: Fraction(1)},
        ),
        (
            "held more than offered (clock skew): scaled to the whole, nothing unallocated",
            1,
            [hold("team-a"), hold("team-b")],
            {"team-a": Fraction(1, 2), "team-b": Fraction(1, 2)},
        ),
    ],
)
def test_shares_by_gpu_seconds(case, gpus, holdings, expected):
    parts = shares("gpu-a", T0, END, gpus * ONE_GPU_MINUTE, holdings)
    assert by_tenant(parts) == expected, case
    assert sum(s.weight for s in parts) == 1
    assert parts[-1].tenant == UNALLOCATED or UNALLOCATED not in expected  # unallocated comes last


def test_replica_gpu_seconds_are_physical_card_seconds():
    (a, rest) = shares("gpu-a", T0, END, ONE_GPU_MINUTE, [hold("team-a", replicas=4)])
    assert a.gpu_seconds == 15 and rest.gpu_seconds == 45 and a.pods == ("team-a-worker",)


@pytest.mark.parametrize(
    ("amount", "weights", "expected"),
    [
        ("0.000010", [Fraction(1, 3)] * 3, ["0.000004", "0.000003", "0.000003"]),  # ties go in row order
        ("0.031017", [Fraction(1, 2)] * 2, ["0.015509", "0.015508"]),
        ("1.000000", [Fraction(2, 3), Fraction(1, 3)], ["0.666667", "0.333333"]),
        (
            "0.000001",
            [Fraction(1, 4), Fraction(3, 4)],
            ["0.000000", "0.000001"],
        ),  # the largest remainder wins
        ("-0.000005", [Fraction(1, 2)] * 2, ["-0.000003", "-0.000002"]),  # a credit splits the same way
        ("0.000000", [Fraction(1)], ["0.000000"]),
    ],
)
def test_largest_remainder_split_is_exact(amount, weights, expected):
    parts = split(Decimal(amount), weights)
    assert [str(p.quantize(MONEY_QUANTUM)) for p in parts] == expected
    assert sum(parts) == Decimal(amount)


def test_split_refuses_weights_that_do_not_sum_to_one_and_amounts_off_the_quantum():
    with pytest.raises(ValueError, match="sum to 1"):
        split(Decimal("1"), [Fraction(1, 2), Fraction(1, 3)])
    with pytest.raises(ValueError, match="not on the quantum"):
        split(Decimal("0.0000001"), [Fraction(1)])


def test_to_decimal_goes_through_the_shortest_repr():
    assert to_decimal(0.031017) == Decimal("0.031017")
    assert to_decimal(0.1 + 0.2) == Decimal("0.300000")
    assert to_decimal(0.0000005) == Decimal("0.000000") and to_decimal(0.0000015) == Decimal("0.000002")


MONEY = ("EffectiveCost", "BilledCost", "ListCost", "ContractedCost", "x_IdleCost")


@pytest.mark.parametrize(
    ("case", "rec", "holdings", "tenants"),
    [
        ("two tenants sharing a node", record(gpus=2, cost=0.062034), [hold("team-a"), hold("team-b")], ["team-a", "team-b"]),
        ("replicas", record(cost=0.031017), [hold("team-a", replicas=4), hold("team-b", replicas=4, pod="b2", gpus=2)], ["team-a", "team-b", UNALLOCATED]),
        ("nobody holding", record(cost=0.031017), [], [UNALLOCATED]),
        ("a pod holding half the interval", record(cost=0.031017), [hold("team-a", start=T0 + timedelta(seconds=30))], ["team-a", UNALLOCATED]),
        ("awkward thirds", record(cost=0.000010, gpus=3), [hold("a"), hold("b"), hold("c")], ["a", "b", "c"]),
    ],
)  # fmt: skip
def test_a_nodes_rows_sum_to_its_interval_cost_exactly(case, rec, holdings, tenants):
    rows = node_rows(rec, holdings, CTX)
    assert [r["x_Tenant"] for r in rows] == tenants, case
    node_cost = to_decimal(rec.EffectiveCost)
    assert sum(r["EffectiveCost"] for r in rows) == node_cost
    assert sum(r["BilledCost"] for r in rows) == node_cost
    assert sum(r["ListCost"] for r in rows) == to_decimal(
        Decimal("1.861") * to_decimal(rec.PricingQuantity, Decimal("1e-9"))
    )
    assert sum(r["x_IdleCost"] for r in rows) == to_decimal(node_cost * (1 - Decimal("0.4582")))
    assert sum(r["PricingQuantity"] for r in rows) == Decimal("0.016666667")  # 60 s in hours, on 1e-9
    assert all(isinstance(r[c], Decimal) and r[c] >= 0 for r in rows for c in MONEY)
    assert all(r["x_NodeEffectiveCost"] == node_cost for r in rows)


def test_two_tenants_half_each_of_the_reference_interval():
    """The DESIGN's reference measurement, $0.031017 at SM_ACTIVE 45.82 %, on a card two tenants time-slice
    two replicas each of: half each, and the odd micro-dollar to the first."""
    rows = node_rows(
        record(cost=0.031017),
        [hold("team-a", gpus=2, replicas=4), hold("team-b", gpus=2, replicas=4)],
        CTX,
    )
    assert [(r["x_Tenant"], str(r["EffectiveCost"]), str(r["x_IdleCost"])) for r in rows] == [
        ("team-a", "0.015509", "0.008403"),
        ("team-b", "0.015508", "0.008402"),
    ]
    assert sum(r["x_IdleCost"] for r in rows) == Decimal("0.016805")  # the DESIGN's idle dollars


def test_unpriced_intervals_stay_out_of_the_focus_rows_and_are_listed_apart():
    priced, unpriced = record("gpu-a"), record("gpu-b", cost=None)
    ds = focus_dataset([priced, unpriced], [hold("team-a")], CTX)
    assert {r["ResourceName"] for r in ds.rows} == {"gpu-a"}
    assert [(r.ResourceName, r.x_Status) for r in ds.unpriced] == [("gpu-b", "no-rate")]
    assert all(r["EffectiveCost"] is not None for r in ds.rows)
