"""Act 6's checker: the holding case and each way cost collection could look right while it was not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assertions.cost import check_cost
from assertions.cost_obs import CostObs, HolderObs
from tests.assertions.tables import check, t


# --- act 6: cost collection ------------------------------------------------------------------------------
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
        "ResourceName": "gpu-a",
        "ChargePeriodStart": f"2026-11-30T12:0{i}:00Z",
        "ChargePeriodEnd": f"2026-11-30T12:0{i + 1}:00Z",
        "x_GpuUtilPercent": util,
        "x_SmActive": sm,
        "EffectiveCost": c,
        "x_InstanceSeconds": seconds,
        "x_IdleCost": (c * (1 - sm) if sm is not None and 0 <= sm <= 1 else None) if idle is None else idle,
        "x_Status": "ok" if sm is not None else "missing-sm-active",
        "x_Message": None,
        "x_GpuCount": 1,
        "x_GpusReporting": 1,
        "x_GpusReportingGpuUtil": 1,
        "x_GpusReportingSmActive": 1,
        "x_GpuUtilSeries": "DCGM_FI_DEV_GPU_UTIL",
        "x_SmActiveSeries": "DCGM_FI_PROF_SM_ACTIVE",
    }


RECORDS_ONLY = CostObs(
    "gpu-a",
    [record(0), record(1), record(2)],
    expected_unit_price=1.861,
    node_created=t(-600),
    expected_sm_active=0.4582,
)
POD = {
    "namespace": "act-1-team-a", "pod": "cost-1-x", "tenant": "team-a", "node": "gpu-a", "gpus": 1,
    "start": "2026-11-30T11:59:30+00:00", "end": None, "replicas": 1, "equivalents": None, "devices": ["GPU-1111"],
}  # fmt: skip
HOLDER = HolderObs(
    "act-1-team-a", "cost-1-x", "team-a", held_from=t(-30), held_until=t(200), submitted_at=t(-40)
)
HELD = replace(
    RECORDS_ONLY, holder=HOLDER, holdings={r["ChargePeriodStart"]: [POD] for r in RECORDS_ONLY.records}
)
# the act's world: its pod held the node's GPU and ran a compute load over its span
COST = replace(HELD, compute_load=True)
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
            "a record of another node",
            replace(COST, records=[{**record(0), "ResourceName": "gpu-b"}, record(1), record(2)]),
            "2026-11-30T12:00:00Z: record of 'gpu-b', not of the act's node gpu-a",
        ),
        (
            "more instance-seconds than the interval has",
            replace(COST, records=[record(0, seconds=75), record(1), record(2)], expected_unit_price=1.861),
            "2026-11-30T12:00:00Z: instance-seconds 75 do not fit inside the 60s interval",
        ),
        (
            "a whole interval charged for a node born half-way through it",
            replace(COST, node_created=t(30)),
            "2026-11-30T12:00:00Z: 60s charged, but the node lived 30s of this interval",
        ),
        (
            "intervals charged after the node was deleted",
            replace(COST, node_deleted=t(90)),
            "2026-11-30T12:02:00Z: 60s charged, but the node lived 0s of this interval",
        ),
        (
            "the node's lifetime unknown",
            replace(COST, node_created=None),
            "the node gpu-a's creation time was not observed",
        ),
        (
            "GPU_UTIL beyond 100",
            replace(COST, records=[record(0, util=101.0), record(1), record(2)]),
            "GPU_UTIL=101.0 is not a percentage in 0-100",
        ),
        (
            "SM_ACTIVE not the load the simulator was told",
            replace(COST, expected_sm_active=0.30),
            "SM_ACTIVE=0.4582, but the workload ran at 0.3 (tolerance 0.005)",
        ),
        (
            "collector reported no samples",
            replace(
                COST,
                records=[],
                collector_log=[
                    "INFO cycle ok",
                    "ERROR gpu_finops.cost.collector: no samples: Prometheus returned no DCGM series",
                ],
            ),
            "no samples: Prometheus returned no DCGM series",
        ),
        (
            "no GPU holdings recorded for an interval the act's pod ran in",
            replace(
                HELD,
                holdings={k: v for k, v in HELD.holdings.items() if k != "2026-11-30T12:01:00Z"},
                collector_log=[
                    "ERROR gpu_finops.cost.collector: GPU holdings (kube) could not be read: ApiException: 403"
                ],
            ),
            "2026-11-30T12:01:00Z: no GPU holdings recorded for gpu-a (the collector ran without a holdings "
            "reader, or its read failed; the export shows this interval unallocated, x_Status no-holdings); "
            "the collector said: 'ERROR gpu_finops.cost.collector: GPU holdings (kube) could not be read: ApiException: 403'",
        ),
        (
            "no GPU holdings recorded at all",
            replace(HELD, holdings={}),
            "2026-11-30T12:00:00Z: no GPU holdings recorded for gpu-a (the collector ran without",
        ),
        (
            "holdings recorded, naming another pod only",
            replace(HELD, holdings={**HELD.holdings, "2026-11-30T12:02:00Z": [{**POD, "pod": "other"}]}),
            "2026-11-30T12:02:00Z: the holdings recorded for gpu-a name ['act-1-team-a/other'], not the act's "
            "pod act-1-team-a/cost-1-x",
        ),
        (
            "holdings recorded with nobody holding while the act's pod ran",
            replace(HELD, holdings={**HELD.holdings, "2026-11-30T12:00:00Z": []}),
            "2026-11-30T12:00:00Z: the holdings recorded for gpu-a name nobody, not the act's pod",
        ),
        (
            "the act's pod attributed to another tenant (its namespace, no ClusterQueue found)",
            replace(
                HELD, holdings={**HELD.holdings, "2026-11-30T12:01:00Z": [{**POD, "tenant": "act-1-team-a"}]}
            ),
            "2026-11-30T12:01:00Z: the act's pod act-1-team-a/cost-1-x was recorded for tenant 'act-1-team-a', "
            "expected 'team-a'",
        ),
        (
            "no record overlaps the act's pod",
            replace(HELD, holder=replace(HOLDER, held_from=t(300), held_until=None)),
            "no record's interval overlaps the act's pod act-1-team-a/cost-1-x (2026-11-30T12:05:00+00:00 to "
            "still running): its holding cannot be checked",
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
    check(
        check_cost(replace(COST, node_created=t(1.4), records=[record(0, seconds=59), record(1), record(2)])),
        True,
    )
    check(check_cost(replace(HELD, compute_load=False)), False)  # no load said to have run: unproven
    # an interval after the pod finished need not name it (nobody held the card then)
    ended = replace(HOLDER, held_until=t(100))
    check(
        check_cost(replace(COST, holder=ended, holdings={**COST.holdings, "2026-11-30T12:02:00Z": []})), True
    )
    assert round(record(0)["EffectiveCost"], 6) == 0.031017 and round(record(0)["x_IdleCost"], 6) == 0.016805
