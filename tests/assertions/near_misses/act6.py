"""Act 6 (cost and idle share): holding worlds and their near-misses."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import strategies as st

from assertions.cost_obs import CostObs, HolderObs
from gpu_finops.facts.timestamps import iso
from tests.assertions.near_misses import Break
from tests.assertions.tables import T0

RATE = 1.861


def record(start, seconds: int, sm: float, util: float, node: str = "gpu-a") -> dict:
    cost = RATE * seconds / 3600
    return {
        "ResourceName": node, "ChargePeriodStart": iso(start), "ChargePeriodEnd": iso(start + timedelta(seconds=60)),
        "x_GpuUtilPercent": util, "x_SmActive": sm, "EffectiveCost": cost, "x_InstanceSeconds": seconds,
        "x_IdleCost": cost * (1 - sm), "x_RateSource": "catalog", "x_Status": "ok", "x_Message": None, "x_GpuCount": 1, "x_GpusReporting": 1,
        "x_GpusReportingGpuUtil": 1, "x_GpusReportingSmActive": 1, "x_GpuUtilSeries": "DCGM_FI_DEV_GPU_UTIL",
        "x_SmActiveSeries": "DCGM_FI_PROF_SM_ACTIVE",
    }  # fmt: skip


@st.composite
def holding(draw: st.DrawFn) -> CostObs:
    n = draw(st.integers(3, 5))
    created_offset = draw(st.integers(0, 59))  # the node came up inside the first interval
    created = T0 + timedelta(seconds=created_offset)
    local = draw(st.booleans())
    sm = draw(st.sampled_from([0.4582, 0.02, 1.0])) if local else None
    recs = []
    for i in range(n):
        # on AWS a load running through an interval shows some activity in it, however little
        load = sm if sm is not None else draw(st.floats(0.01, 0.9))
        util = min(100.0, load * 100 + draw(st.floats(0, 40)))
        recs.append(record(T0 + timedelta(seconds=60 * i), 60 - created_offset if i == 0 else 60, load, util))
    holder = HolderObs(
        "team-a", "cost-1", "team-a", T0 + timedelta(seconds=created_offset + 1), submitted_at=T0
    )
    holdings = {
        r["ChargePeriodStart"]: [
            {
                "namespace": "team-a",
                "pod": "cost-1",
                "tenant": "team-a",
                "node": "gpu-a",
                "gpus": 1,
                "start": holder.held_from.isoformat(),
                "end": None,
                "replicas": 1,
                "equivalents": None,
                "devices": [],
            }
        ]
        for r in recs
    }
    order = draw(st.permutations(recs))
    return CostObs("gpu-a", order, RATE, min_records=2, expected_rate_source="catalog", node_created=created,
                   expected_sm_active=sm, holdings=holdings, holder=holder, compute_load=True)  # fmt: skip


def first(o: CostObs, **changes) -> CostObs:
    recs = sorted(o.records, key=lambda r: r["ChargePeriodStart"])
    return replace(o, records=[{**recs[0], **changes}, *recs[1:]])


def all_records(o: CostObs, **changes) -> CostObs:
    return replace(o, records=[{**r, **changes} for r in o.records])


def never_there(o: CostObs) -> CostObs:
    """The source's metric that was never there: SM_ACTIVE 0 throughout while the load ran (AWS, no expected value)."""
    recs = [{**r, "x_SmActive": 0.0, "x_IdleCost": r["EffectiveCost"]} for r in o.records]
    return replace(o, records=recs, expected_sm_active=None)


def util_never_there(o: CostObs) -> CostObs:
    """GPU_UTIL 0 throughout while the load ran: SM_ACTIVE's small value stays within its tolerance above it."""
    return replace(o, records=[{**r, "x_GpuUtilPercent": 0.0} for r in o.records])


def sm_over_util(o: CostObs) -> CostObs:
    """SM_ACTIVE 0.5 while GPU_UTIL says a kernel ran 10 % of the time: not one GPU's metrics."""
    recs = sorted(o.records, key=lambda r: r["ChargePeriodStart"])
    cost = recs[0]["EffectiveCost"]
    changed = {**recs[0], "x_SmActive": 0.5, "x_IdleCost": cost * 0.5, "x_GpuUtilPercent": 10.0}
    return replace(o, records=[changed, *recs[1:]])


def gap(o: CostObs) -> CostObs:
    recs = sorted(o.records, key=lambda r: r["ChargePeriodStart"])
    return replace(o, records=[recs[0], *recs[2:]])


def seconds(s: float) -> timedelta:
    return timedelta(seconds=s)


BREAKS = (
    Break("enough_consecutive_records", "count", "one record", lambda o: replace(o, records=list(o.records)[:1])),
    Break("enough_consecutive_records", "count", "one interval recorded twice",
          lambda o: replace(o, records=[*o.records, dict(o.records[0])])),
    Break("enough_consecutive_records", "time", "a gap between records", gap),
    Break("records_are_of_the_node", "identity", "a record of another node", lambda o: first(o, ResourceName="gpu-b")),
    Break("every_figure_from_every_gpu", "provenance", "a record the collector marked partial",
          lambda o: first(o, x_Status="partial", x_Message="0 of 1 GPUs on gpu-a report SM_ACTIVE")),
    Break("every_figure_from_every_gpu", "count", "figures from no reporting GPU",
          lambda o: first(o, x_GpusReporting=0)),
    Break("every_figure_from_every_gpu", "count", "SM_ACTIVE from no reporting card",
          lambda o: first(o, x_GpusReportingSmActive=0)),
    Break("every_figure_from_every_gpu", "provenance", "GPU_UTIL from a series not named",
          lambda o: first(o, x_GpuUtilSeries=None)),
    Break("every_figure_from_every_gpu", "provenance", "a record with no figure's provenance (written before it was kept)",
          lambda o: first(o, x_GpusReportingGpuUtil=None, x_GpusReportingSmActive=None, x_GpuUtilSeries=None, x_SmActiveSeries=None)),
    Break("every_figure_from_every_gpu", "count", "a node of no GPU", lambda o: first(o, x_GpuCount=0, x_GpusReporting=0)),
    Break("cost_is_the_rate_times_seconds", "state", "a cost that is not a number", lambda o: first(o, EffectiveCost=float("nan"))),
    Break("idle_is_cost_times_unused_share", "state", "an idle cost that is not a number", lambda o: first(o, x_IdleCost=float("nan"))),
    Break("instance_seconds_match_the_node_life", "provenance", "the node's creation not observed",
          lambda o: replace(o, node_created=None)),
    Break("instance_seconds_match_the_node_life", "time", "charged seconds before the node existed",
          lambda o: replace(o, node_created=o.node_created + seconds(30))),
    Break("instance_seconds_match_the_node_life", "count", "more seconds than the interval",
          lambda o: first(o, x_InstanceSeconds=61)),
    Break("gpu_util_is_a_percentage", "provenance", "GPU_UTIL missing", lambda o: first(o, x_GpuUtilPercent=None)),
    Break("gpu_util_is_a_percentage", "state", "GPU_UTIL a ratio", lambda o: first(o, x_GpuUtilPercent=140.0)),
    Break("sm_active_is_the_ratio_the_load_ran_at", "provenance", "SM_ACTIVE missing", lambda o: first(o, x_SmActive=None)),
    Break("sm_active_is_the_ratio_the_load_ran_at", "state", "SM_ACTIVE a percentage", lambda o: first(o, x_SmActive=45.8)),
    Break("sm_active_is_the_ratio_the_load_ran_at", "state", "SM_ACTIVE off the simulated load",
          lambda o: replace(o, expected_sm_active=0.9) if o.expected_sm_active != 0.9 else replace(o, expected_sm_active=0.1)),
    Break("sm_active_seen_while_the_load_ran", "provenance", "SM_ACTIVE identically zero under load", never_there),
    Break("sm_active_seen_while_the_load_ran", "provenance", "no load said to have run",
          lambda o: replace(o, compute_load=False)),
    Break("gpu_util_seen_while_the_load_ran", "provenance", "GPU_UTIL identically zero under load", util_never_there),
    Break("sm_active_within_gpu_util", "state", "SM_ACTIVE above GPU_UTIL", sm_over_util),
    Break("cost_is_the_rate_times_seconds", "state", "a zero cost", lambda o: first(o, EffectiveCost=0.0)),
    Break("cost_is_the_rate_times_seconds", "state", "charged at another rate",
          lambda o: replace(o, expected_unit_price=RATE * 2)),
    Break("cost_is_the_rate_times_seconds", "provenance", "another rate source",
          lambda o: first(o, x_RateSource="on-demand")),
    Break("cost_is_the_rate_times_seconds", "provenance", "no price for an interval",
          lambda o: replace(o, expected_unit_price={})),
    Break("idle_is_cost_times_unused_share", "state", "idle = the whole cost", lambda o: first(o, x_IdleCost=-1.0)),
    Break("idle_is_cost_times_unused_share", "provenance", "idle missing", lambda o: first(o, x_IdleCost=None)),
    Break("holdings_name_the_acts_pod", "provenance", "no holdings recorded", lambda o: replace(o, holdings={})),
    Break("holdings_name_the_acts_pod", "provenance", "the act's pod not observed", lambda o: replace(o, holder=None)),
    Break("holdings_name_the_acts_pod", "identity", "holdings name another pod",
          lambda o: replace(o, holdings={k: [{**h, "pod": "other"} for h in v] for k, v in o.holdings.items()})),
    Break("holdings_name_the_acts_pod", "ownership", "the pod recorded for another tenant",
          lambda o: replace(o, holdings={k: [{**h, "tenant": "team-b"} for h in v] for k, v in o.holdings.items()})),
    Break("holdings_name_the_acts_pod", "count", "the pod recorded holding no GPU",
          lambda o: replace(o, holdings={k: [{**h, "gpus": 0} for h in v] for k, v in o.holdings.items()})),
    Break("holdings_name_the_acts_pod", "identity", "the pod recorded holding another node's card",
          lambda o: replace(o, holdings={k: [{**h, "node": "gpu-b"} for h in v] for k, v in o.holdings.items()})),
    Break("holdings_name_the_acts_pod", "time", "the pod's span overlaps no record",
          lambda o: replace(o, holder=replace(o.holder, held_from=T0 + seconds(86400)))),
    Break("holdings_name_the_acts_pod", "time", "the pod recorded holding an hour before its Job was created",
          lambda o: replace(o, holdings={**o.holdings, (T0 - seconds(3600)).isoformat(): next(iter(o.holdings.values()))})),
)  # fmt: skip
