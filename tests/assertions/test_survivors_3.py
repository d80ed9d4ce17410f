"""Act 6's surviving mutants from the first mutation run over assertions/ (docs/claims.md, mutation
section): each row asserts the exact clause and what it says, at the edge the mutant moved."""

from __future__ import annotations

from dataclasses import replace

from assertions.clauses import Miss
from assertions.cost import (
    check_cost,
    cost_is_the_rate_times_seconds,
    enough_consecutive_records,
    idle_is_cost_times_unused_share,
    instance_seconds_match_the_node_life,
    sm_active_is_the_ratio_the_load_ran_at,
    sm_active_seen_while_the_load_ran,
)
from assertions.cost_obs import HolderObs
from tests.assertions.tables import t
from tests.assertions.test_cost import COST, record

WANT_COST = "cost = $1.861/h x seconds > 0"
WANT_SECS = "instance-seconds = the node's life inside each interval (1 s)"
WANT_IDLE = "idle = cost x (1 - SM_ACTIVE)"


def one(**changes) -> dict:
    return {**record(0), **changes}


# --- enough_consecutive_records -------------------------------------------------------------------------
def test_one_record_is_enough_when_one_is_asked_for():
    assert enough_consecutive_records(replace(COST, min_records=1, records=[record(0)])) == []


def test_asking_for_no_records_is_named():
    assert enough_consecutive_records(replace(COST, min_records=0)) == [
        Miss(
            ">= 0 consecutive records, one per interval",
            "min_records 0: a claim about no records proves nothing",
        )
    ]


def test_too_few_records_quote_the_collectors_last_word():
    o = replace(COST, records=[record(0)], collector_log=("starting", "scraped gpu-a", "sleeping 60s"))
    assert enough_consecutive_records(o) == [
        Miss(
            ">= 2 consecutive records, one per interval",
            "1 record(s) for gpu-a, expected at least 2 consecutive; the collector said: 'sleeping 60s'",
        )
    ]


# --- instance_seconds_match_the_node_life ---------------------------------------------------------------
def test_zero_seconds_before_the_node_existed_is_right():
    o = replace(COST, records=[record(0, seconds=0)], node_created=t(120))
    assert instance_seconds_match_the_node_life(o) == []


def test_seconds_one_over_the_node_life_from_a_fractional_creation_are_within_tolerance():
    o = replace(COST, records=[record(0, seconds=31)], node_created=t(30.7))
    assert instance_seconds_match_the_node_life(o) == []


def test_a_record_out_of_its_interval_does_not_stop_the_next_from_being_checked():
    o = replace(COST, records=[record(0, seconds=-1), record(1, seconds=30)])
    assert instance_seconds_match_the_node_life(o) == [
        Miss(WANT_SECS, "2026-11-30T12:00:00Z: instance-seconds -1 do not fit inside the 60s interval"),
        Miss(
            WANT_SECS,
            "2026-11-30T12:01:00Z: 30s charged, but the node lived 60s of this interval (created "
            "2026-11-30T11:50:00+00:00, deleted None)",
        ),
    ]


# --- SM_ACTIVE ------------------------------------------------------------------------------------------
def test_sm_active_exactly_the_tolerance_away_is_the_load():
    o = replace(COST, records=[record(0, sm=0.75)], expected_sm_active=0.5, sm_tolerance=0.25)
    assert sm_active_is_the_ratio_the_load_ran_at(o) == []


def test_a_load_span_outside_every_record_is_named_with_its_end():
    holder = HolderObs("act-1-team-a", "cost-1-x", "team-a", held_from=t(600), held_until=t(700))
    assert sm_active_seen_while_the_load_ran(replace(COST, compute_load=True, holder=holder)) == [
        Miss(
            "SM_ACTIVE recorded in some interval the compute load ran",
            "no record's interval overlaps the load's span (2026-11-30T12:10:00+00:00 to "
            "2026-11-30T12:11:40+00:00): whether SM_ACTIVE was there while it ran is unobserved",
        )
    ]


# --- cost_is_the_rate_times_seconds ---------------------------------------------------------------------
def test_each_record_without_a_cost_is_named_under_the_plain_rate():
    o = replace(COST, records=[one(EffectiveCost=0), record(1, cost=-1.0)])
    assert cost_is_the_rate_times_seconds(o) == [
        Miss(WANT_COST, "2026-11-30T12:00:00Z: interval cost 0, expected > 0"),
        Miss(WANT_COST, "2026-11-30T12:01:00Z: interval cost -1.0, expected > 0"),
    ]


def test_the_wrong_rate_source_quotes_the_collectors_message():
    o = replace(
        COST,
        records=[one(x_RateSource="catalog", x_Message="spot price API denied")],
        expected_rate_source="spot",
    )
    assert cost_is_the_rate_times_seconds(o) == [
        Miss(
            WANT_COST + ", rate source spot",
            "2026-11-30T12:00:00Z: charged from rate source 'catalog', expected 'spot' (spot price API denied)",
        )
    ]


def test_a_record_with_no_seconds_is_checked_against_no_cost():
    o = replace(COST, records=[one(x_InstanceSeconds=None)])
    assert cost_is_the_rate_times_seconds(o) == [
        Miss(WANT_COST, "2026-11-30T12:00:00Z: cost 0.031017 != rate 1.861000/h x Nones = 0.000000")
    ]


def test_a_cost_exactly_the_tolerance_off_is_right():
    o = replace(COST, records=[one(x_InstanceSeconds=0, EffectiveCost=1e-6)])
    assert cost_is_the_rate_times_seconds(o) == []


# --- idle_is_cost_times_unused_share --------------------------------------------------------------------
def test_idle_of_a_fully_busy_gpu_is_zero_within_the_tolerance():
    assert (
        idle_is_cost_times_unused_share(replace(COST, records=[one(x_SmActive=1.0, x_IdleCost=1e-6)])) == []
    )


def test_idle_of_a_fully_busy_gpu_is_checked():
    o = replace(COST, records=[one(x_SmActive=1.0, EffectiveCost=1.0, x_IdleCost=0.5)])
    assert idle_is_cost_times_unused_share(o) == [
        Miss(WANT_IDLE, "2026-11-30T12:00:00Z: idle cost 0.5 != cost x (1 - SM_ACTIVE) = 0.000000")
    ]


def test_sm_active_above_one_leaves_idle_to_the_ratio_clause():
    assert idle_is_cost_times_unused_share(replace(COST, records=[record(0, sm=1.5)])) == []


def test_a_record_without_sm_active_does_not_stop_the_next_from_being_checked():
    o = replace(
        COST,
        records=[
            record(0, sm=None),
            one(ChargePeriodStart="x", EffectiveCost=1.0, x_SmActive=0.5, x_IdleCost=0.1),
        ],
    )
    assert idle_is_cost_times_unused_share(o) == [
        Miss(WANT_IDLE, "x: idle cost 0.1 != cost x (1 - SM_ACTIVE) = 0.500000")
    ]


# --- check_cost -----------------------------------------------------------------------------------------
def test_the_plain_claim_says_no_rate_source_load_or_holdings():
    assert check_cost(COST).expected == (
        ">= 2 consecutive records, each with GPU_UTIL and SM_ACTIVE (ratio, <= GPU_UTIL/100 + 0.05), cost = "
        "$1.861/h x seconds > 0, idle = cost x (1 - SM_ACTIVE)"
    )


def test_the_totals_count_a_zero_idle_and_a_missing_cost_as_nothing():
    busy = replace(COST, records=[record(0, sm=1.0), record(1, sm=1.0)], expected_sm_active=None)
    v = check_cost(busy)
    assert v.holds, v.render()
    assert v.observed == "2 records, $0.062033 of which $0.000000 idle"
    v = check_cost(replace(COST, records=[one(EffectiveCost=None), record(1)]))
    assert v.evidence["cost"] == record(1)["EffectiveCost"]
