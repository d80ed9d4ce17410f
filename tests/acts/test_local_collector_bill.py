"""The acts' bill of one node-interval refuses to read a missing or unpriced record as zero dollars."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from acts.local_collector import LocalCollector
from gpu_finops.cost.records import CostRecord

AFTER = datetime(2026, 1, 1, 12, 0, 3, tzinfo=UTC)


def record(node: str, *, cost: float | None = 0.5, status: str = "ok") -> CostRecord:
    return CostRecord(
        "2026-01-01T12:00:10Z", "2026-01-01T12:00:20Z", node, node, "GPU node", "us-east-1", None, "Dynamic",
        "Hours", 10 / 3600, None, cost, "g6e.xlarge", "spot", "gpu-spot", 1, 10.0, None, "catalog", False,
        None, None, None, None, None, 0, None, status,
    )  # fmt: skip


class Store:
    def __init__(self, records: list[CostRecord]):
        self.written = records

    def records(self, since=None, until=None):
        return list(self.written)

    def holdings(self, since=None, until=None):
        return {}


class Cycles:
    def __init__(self) -> None:
        self.intervals: list[tuple[datetime, datetime]] = []

    def cycle(self, start: datetime, end: datetime) -> None:
        self.intervals.append((start, end))


def collector(records: list[CostRecord]) -> LocalCollector:
    return LocalCollector(Cycles(), Store(records), None, 10)


def test_a_bill_of_a_node_the_collector_never_priced_names_the_node_the_interval_and_the_nodes_it_did():
    with pytest.raises(LookupError) as e:
        collector([record("kwok-other")]).bill("kwok-gpu-1", AFTER, "act 8")
    said = str(e.value)
    assert (
        "no record for node kwok-gpu-1 in the interval 2026-01-01T12:00:10Z to 2026-01-01T12:00:20Z" in said
    )
    assert "nodes it did price: ['kwok-other']" in said


def test_a_bill_with_no_record_at_all_says_none_were_priced():
    with pytest.raises(LookupError, match=r"nodes it did price: none\)"):
        collector([]).bill("kwok-gpu-1", AFTER, "act 8")


def test_a_record_without_a_rate_is_refused_naming_its_status():
    with pytest.raises(LookupError, match=r"priced no rate for node kwok-gpu-1 .*\(status no-rate\)"):
        collector([record("kwok-gpu-1", cost=None, status="no-rate")]).bill("kwok-gpu-1", AFTER, "act 8")


def test_a_priced_record_is_billed_at_the_catalog_rate_after_collecting_its_own_interval():
    lc = collector([replace(record("kwok-gpu-1"), EffectiveCost=0.25)])
    bill = lc.bill("kwok-gpu-1", AFTER, "act 8")
    start, end = datetime(2026, 1, 1, 12, 0, 10, tzinfo=UTC), datetime(2026, 1, 1, 12, 0, 20, tzinfo=UTC)
    assert lc.collector.intervals == [(start, end)]
    assert bill.card_usd == Decimal("0.25")
    assert bill.usd_per_hour > 0
