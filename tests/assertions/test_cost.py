"""Act 6, cost collection: the case where the claim holds and each way it could look true while false.

Every adjacent case must give holds=False with a message that says why (the `why` column)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assertions.cost import CostObs, check_cost
from tests.assertions.observations import check


def record(
    i: int,
    sm: float | None = 0.4582,
    util: float | None = 100.0,
    cost: float | None = None,
    idle: float | None = None,
    seconds: float = 60,
) -> dict:
    c = 1.861 * seconds / 3600 if cost is None else cost
    return {
        "ChargePeriodStart": f"2026-11-30T12:0{i}:00Z",
        "ChargePeriodEnd": f"2026-11-30T12:0{i + 1}:00Z",
        "x_GpuUtilPercent": util,
        "x_SmActive": sm,
        "EffectiveCost": c,
        "x_InstanceSeconds": seconds,
        "x_IdleCost": (c * (1 - sm) if sm is not None and 0 <= sm <= 1 else None) if idle is None else idle,
        "x_Status": "ok" if sm is not None else "missing-sm-active",
        "x_Message": None,
    }


COST = CostObs("gpu-a", [record(0), record(1), record(2)], expected_unit_price=1.861)
SPOT_CURVE = {f"2026-11-30T12:0{i}:00Z": 1.861 for i in range(3)}  # per-interval prices, as on AWS


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "records missing SM_ACTIVE",
            replace(COST, records=[record(0), record(1, sm=None)]),
            "SM_ACTIVE missing",
        ),
        (
            "SM_ACTIVE as a percentage",
            replace(COST, records=[record(0, sm=45.82, idle=0.0), record(1)]),
            "not a ratio",
        ),
        ("GPU_UTIL missing", replace(COST, records=[record(0, util=None), record(1)]), "GPU_UTIL missing"),
        ("zero cost", replace(COST, records=[record(0, cost=0.0), record(1)]), "expected > 0"),
        ("wrong rate", replace(COST, expected_unit_price=0.95), "!= rate"),
        (
            "idle not cost x (1 - SM_ACTIVE)",
            replace(COST, records=[record(0, idle=0.01), record(1)]),
            "idle cost",
        ),
        ("not consecutive", replace(COST, records=[record(0), record(2)]), "not consecutive"),
        (
            "one interval priced off the spot curve",
            replace(COST, expected_unit_price=SPOT_CURVE | {"2026-11-30T12:01:00Z": 1.70}),
            "2026-11-30T12:01:00Z: cost 0.031017 != rate 1.700000/h",
        ),
        (
            "an interval with no expected price",
            replace(COST, expected_unit_price={"2026-11-30T12:00:00Z": 1.861}),
            "no expected price for this interval",
        ),
        (
            "a spot node charged at the on-demand fallback",
            replace(
                COST,
                records=[{**record(i), "x_RateSource": "fallback"} for i in range(3)],
                expected_rate_source="spot",
            ),
            "charged from rate source 'fallback', expected 'spot'",
        ),
        (
            "collector reported no samples",
            replace(
                COST,
                records=[],
                collector_log=[
                    "INFO cycle ok",
                    "ERROR finops.collector: no samples: Prometheus returned no DCGM series",
                ],
            ),
            "no samples: Prometheus returned no DCGM series",
        ),
    ],
)
def test_cost_adjacent_cases_fail(case, obs, why):
    check(check_cost(obs), False, why)


def test_cost_holds_with_the_reference_figures():
    v = check_cost(COST)
    check(v, True)
    spot = [{**record(i), "x_RateSource": "spot"} for i in range(3)]
    check(
        check_cost(replace(COST, records=spot, expected_unit_price=SPOT_CURVE, expected_rate_source="spot")),
        True,
    )
    assert round(record(0)["EffectiveCost"], 6) == 0.031017 and round(record(0)["x_IdleCost"], 6) == 0.016805
