"""The collector records who held each node's GPUs per interval; the export splits by what was recorded.

The claim: a past interval is split by the pods that held the GPUs then (a pod deleted before the export
is still attributed), and an interval nobody recorded is one unallocated row whose x_Status says so,
never a split guessed from other intervals' or today's pods."""

from __future__ import annotations

import dataclasses
import sqlite3
from datetime import timedelta
from decimal import Decimal
from fractions import Fraction

import pytest

from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.cost.collector import Collector, align
from gpu_finops.cost.focus import focus_dataset
from gpu_finops.cost.gpu_holdings import GpuHolding, pod_resources_devices
from gpu_finops.cost.holdings_record import STATUS_NO_HOLDINGS, HoldingsReader, IntervalHoldings
from gpu_finops.cost.records import STATUS_OK
from gpu_finops.cost.store import SCHEMA_VERSION, SqliteCostStore, StoreVersionError
from gpu_finops.facts import dcgm
from gpu_finops.facts.timestamps import iso
from gpu_finops.model.holding import DeviceIdError, Holder, card_shares
from tests.gpu_finops.cost.conftest import FakeNodes, gpu, node
from tests.gpu_finops.cost.focus_fixtures import CTX, T0, hold, record
from tests.gpu_finops.cost.test_collector import RATES, wait_for_series
from tests.gpu_finops.cost.test_store import _dynamo


def recorded(rec, holdings, source="kube") -> IntervalHoldings:
    return IntervalHoldings(rec.ResourceName, rec.ResourceId, rec.ChargePeriodStart, rec.ChargePeriodEnd,
                            source, rec.ChargePeriodEnd, tuple(holdings))  # fmt: skip


# --- the store ---------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request, tmp_path):
    if request.param == "sqlite":
        return SqliteCostStore(tmp_path / "c.sqlite")
    return _dynamo(request.getfixturevalue("boto_session"))


def test_holdings_round_trip_beside_their_records_and_nobody_is_not_unrecorded(store):
    first, second, third = (record(start=T0 + timedelta(minutes=i)) for i in range(3))
    held = hold("team-a", replicas=4, end=T0 + timedelta(seconds=30))
    held = GpuHolding(**{**held.__dict__, "devices": ("GPU-abc::1",)})
    store.upsert([first, second, third], [recorded(first, [held]), recorded(second, [])])
    got = store.holdings()
    assert set(got) == {("gpu-a", first.ChargePeriodStart), ("gpu-a", second.ChargePeriodStart)}
    assert got[("gpu-a", first.ChargePeriodStart)].holdings == (held,)
    assert got[("gpu-a", second.ChargePeriodStart)].holdings == ()  # recorded: nobody held
    assert ("gpu-a", third.ChargePeriodStart) not in got  # not recorded at all
    assert list(store.holdings(since=second.ChargePeriodStart)) == [("gpu-a", second.ChargePeriodStart)]
    assert store.records() == [first, second, third]


def test_dynamodb_refuses_holdings_without_their_record(boto_session):
    store = _dynamo(boto_session)
    rec = record()
    with pytest.raises(ValueError, match=r"have no cost record in this upsert: on DynamoDB they are"):
        store.upsert([], [recorded(rec, [])])


def test_a_version_1_sqlite_file_is_migrated_in_place_and_keeps_its_records(tmp_path):
    path = tmp_path / "old.sqlite"
    SqliteCostStore(path).upsert([record()])
    db = sqlite3.connect(path)  # make it what version 1 wrote: cost_records alone, user_version 0
    db.execute("DROP TABLE gpu_holdings")
    db.execute("PRAGMA user_version = 0")
    db.commit()
    db.close()
    reopened = SqliteCostStore(path)
    assert reopened.schema_version == SCHEMA_VERSION == 4
    assert reopened.records() == [record()] and reopened.holdings() == {}


def test_a_version_2_file_gains_the_gpu_util_unit_column_and_reads_it_as_none(tmp_path):
    path = tmp_path / "v2.sqlite"
    SqliteCostStore(path).upsert([record()])
    db = sqlite3.connect(path)  # what version 2 wrote: no x_GpuUtilUnit column
    db.execute("ALTER TABLE cost_records DROP COLUMN x_GpuUtilUnit")
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()
    assert [r.x_GpuUtilUnit for r in SqliteCostStore(path, read_only=True).records()] == [None]
    reopened = SqliteCostStore(path)
    assert reopened.schema_version == 4
    reopened.upsert([dataclasses.replace(record(), x_GpuUtilUnit="ratio")])
    assert [r.x_GpuUtilUnit for r in reopened.records()] == ["ratio"]


PROVENANCE = ("x_GpusReportingGpuUtil", "x_GpusReportingSmActive", "x_GpuUtilSeries", "x_SmActiveSeries")


def test_a_version_3_file_gains_each_figures_provenance_and_reads_it_as_none(tmp_path):
    path = tmp_path / "v3.sqlite"
    SqliteCostStore(path).upsert([record()])
    db = sqlite3.connect(path)  # what version 3 wrote: no provenance columns
    for column in PROVENANCE:
        db.execute(f"ALTER TABLE cost_records DROP COLUMN {column}")
    db.execute("PRAGMA user_version = 3")
    db.commit()
    db.close()
    (old,) = SqliteCostStore(path, read_only=True).records()
    assert [getattr(old, c) for c in PROVENANCE] == [None] * 4
    reopened = SqliteCostStore(path)
    assert reopened.schema_version == 4
    mine = dataclasses.replace(record(), x_GpusReportingGpuUtil=8, x_GpusReportingSmActive=8,
                               x_GpuUtilSeries="DCGM_FI_DEV_GPU_UTIL", x_SmActiveSeries="DCGM_FI_PROF_SM_ACTIVE")  # fmt: skip
    reopened.upsert([mine])
    assert reopened.records() == [mine]


def test_a_store_from_a_newer_schema_is_refused_by_name(tmp_path):
    path = tmp_path / "new.sqlite"
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 5")
    db.commit()
    db.close()
    with pytest.raises(StoreVersionError, match=r"new.sqlite: cost store schema version 5, this gpu-finops "
                       r"knows up to 4: use the gpu-finops that wrote it, or a newer one"):  # fmt: skip
        SqliteCostStore(path)


# --- the export of what was recorded -----------------------------------------------------------------


def test_an_unrecorded_interval_is_one_unallocated_row_saying_why_never_spread():
    """Near-miss: team-a's pod has held since before both intervals and still holds. Applied as a flat
    list it would take the second interval too; recorded only for the first, the second is unknown."""
    first, second = record(), record(start=T0 + timedelta(minutes=1))
    holder = hold("team-a")  # start T0 - 5 min, end None
    flat = focus_dataset([first, second], [holder], CTX).rows
    assert [(r["ChargePeriodStart"], r["x_Tenant"]) for r in flat] == [
        (T0, "team-a"),
        (second_start(), "team-a"),
    ]

    rows = focus_dataset(
        [first, second], {("gpu-a", first.ChargePeriodStart): recorded(first, [holder])}, CTX
    ).rows
    assert [(r["x_Tenant"], r["x_Status"]) for r in rows] == [
        ("team-a", STATUS_OK),
        ("unallocated", STATUS_NO_HOLDINGS),
    ]
    unknown = rows[1]
    assert unknown["EffectiveCost"] == Decimal("0.031017") == unknown["x_NodeEffectiveCost"]
    assert unknown["x_AllocationShare"] == 1.0 and unknown["x_Pods"] == "[]"
    assert "no GPU holdings were recorded for this interval" in unknown["ChargeDescription"]


def test_recorded_nobody_is_unallocated_with_the_intervals_own_status():
    rec = record()
    (row,) = focus_dataset([rec], {("gpu-a", rec.ChargePeriodStart): recorded(rec, [])}, CTX).rows
    assert (row["x_Tenant"], row["x_Status"]) == ("unallocated", STATUS_OK)


def second_start():
    return T0 + timedelta(minutes=1)


def test_pod_resources_answer_gives_device_ids_as_the_kubelet_gave_them():
    body = {"podResources": [
        {"namespace": "a", "name": "p", "containers": [{"name": "c", "devices": [
            {"resourceName": "nvidia.com/gpu.shared", "deviceIds": ["GPU-u::0"]}]}]},
        {"namespace": "a", "name": "cpu-only", "containers": [{"name": "c", "devices": []}]},
    ]}  # fmt: skip
    assert pod_resources_devices(body) == {("a", "p"): ("GPU-u::0",)}


def test_a_pod_resources_id_the_device_plugin_would_not_write_refuses_the_answer_naming_it():
    body = {"podResources": [{"namespace": "a", "name": "p", "containers": [{"name": "c", "devices": [
        {"resourceName": "nvidia.com/gpu", "deviceIds": ["GPU-u::0", "::1"]}]}]}]}  # fmt: skip
    with pytest.raises(DeviceIdError, match=r"device id '::1' names no card"):
        pod_resources_devices(body)


def test_a_holdings_devices_are_held_as_the_model_holds_them_and_sum_to_its_physical_gpus():
    h = GpuHolding("a", "team-a", "p", "gpu-a", 2, T0, replicas=4, devices=("GPU-u::0", "GPU-u::3"))
    assert [(x.card, x.holder, x.share) for x in h.held()] == [
        ("GPU-u", Holder("a", "p", "team-a"), Fraction(1, 4)),
        ("GPU-u", Holder("a", "p", "team-a"), Fraction(1, 4)),
    ]
    assert sum(x.share for x in h.held()) == h.physical_gpus == Fraction(1, 2)
    assert card_shares(h.held()) == {"GPU-u": Fraction(1, 2)}


# --- the collector, against a real Prometheus --------------------------------------------------------


class Pods:
    """The holdings reader's boundary: what the Kubernetes API lists now (the test deletes pods)."""

    def __init__(self, holdings: list[GpuHolding]):
        self.holdings, self.fail = holdings, None

    def read(self) -> list[GpuHolding]:
        if self.fail:
            raise self.fail
        return list(self.holdings)


def collector(prom_url, store, pods: Pods | None, clock) -> Collector:
    reader = HoldingsReader(pods.read) if pods else None
    return Collector(FakeNodes([node("shared")]), PrometheusClient(prom_url), RATES, store, interval=60,
                     clock=clock, holdings=reader)  # fmt: skip


def test_a_pod_deleted_before_the_export_is_still_attributed(sim, prometheus):
    sim.set_gpus([gpu("shared", 0, sm=0.5)])
    end = align(T0.now(T0.tzinfo), 60)
    start = end - timedelta(seconds=60)
    now = [end + timedelta(seconds=5)]
    pods = Pods([
        hold("team-a", node="shared", replicas=4, start=start - timedelta(minutes=5), end=start + timedelta(seconds=30)),
        hold("team-b", node="shared", replicas=4, start=start - timedelta(minutes=5)),
    ])  # fmt: skip
    store = SqliteCostStore(":memory:")
    c = collector(prometheus.url, store, pods, lambda: now[0])
    wait_for_series(c.prom, "shared", dcgm.SM_ACTIVE)
    c.cycle(start, end)
    pods.holdings = []  # both pods deleted, then the export runs
    today = focus_dataset(store.records(), pods.read(), CTX).rows  # near-miss: today's pods
    assert [r["x_Tenant"] for r in today] == ["unallocated"]

    rows = focus_dataset(store.records(), store.holdings(), CTX).rows
    # one card in 4 replicas over 60 s: team-a held a replica 30 s, team-b 60 s -> 7.5 and 15 card-seconds
    assert [(r["x_Tenant"], r["x_GpuSeconds"]) for r in rows] == [
        ("team-a", 7.5),
        ("team-b", 15.0),
        ("unallocated", 37.5),
    ]
    assert sum(r["EffectiveCost"] for r in rows) == rows[0]["x_NodeEffectiveCost"]


def test_a_pod_gone_between_cycles_is_charged_until_it_was_last_seen(sim, prometheus):
    sim.set_gpus([gpu("shared", 0, sm=0.5)])
    end = align(T0.now(T0.tzinfo), 60)
    start = end - timedelta(seconds=60)
    now = [start + timedelta(seconds=5)]  # cycle 1 lists at start + 5 s, the pod still holding
    pods = Pods([hold("team-a", node="shared", start=start - timedelta(minutes=5))])
    store = SqliteCostStore(":memory:")
    c = collector(prometheus.url, store, pods, lambda: now[0])
    wait_for_series(c.prom, "shared", dcgm.SM_ACTIVE)
    c.cycle(start - timedelta(seconds=60), start)
    pods.holdings, now[0] = [], end + timedelta(seconds=5)  # gone (deleted with no end seen) by cycle 2
    c.cycle(start, end)
    interval = store.holdings()[("shared", iso(start))]
    assert [(h.pod, h.end) for h in interval.holdings] == [("team-a-worker", start + timedelta(seconds=5))]
    rows = [
        r
        for r in focus_dataset(store.records(), store.holdings(), CTX).rows
        if r["ChargePeriodStart"] == start
    ]
    assert [(r["x_Tenant"], r["x_GpuSeconds"]) for r in rows] == [("team-a", 5.0), ("unallocated", 55.0)]


def test_a_reader_that_fails_records_nothing_and_says_so(sim, prometheus):
    sim.set_gpus([gpu("shared", 0, sm=0.5)])
    end = align(T0.now(T0.tzinfo), 60)
    pods = Pods([])
    pods.fail = ConnectionError("apiserver refused")
    store = SqliteCostStore(":memory:")
    c = collector(prometheus.url, store, pods, lambda: end + timedelta(seconds=5))
    wait_for_series(c.prom, "shared", dcgm.SM_ACTIVE)
    result = c.cycle(end - timedelta(seconds=60), end)
    assert not result.healthy
    assert [p for p in result.problems if p.startswith("GPU holdings")] == [
        f"GPU holdings (kube) could not be read: ConnectionError: apiserver refused; the intervals of "
        f"[{iso(end - timedelta(seconds=60))}, {iso(end)}) have no holdings recorded and will export as "
        "unallocated (x_Status no-holdings)"
    ]
    assert len(store.records()) == 1 and store.holdings() == {}
    (row,) = focus_dataset(store.records(), store.holdings(), CTX).rows
    assert (row["x_Tenant"], row["x_Status"]) == ("unallocated", STATUS_NO_HOLDINGS)


def test_cli_export_splits_by_what_was_recorded_by_default_and_names_what_was_not(tmp_path, capsys):
    from gpu_finops.cli import main

    first, second = record(), record(start=T0 + timedelta(minutes=1))
    path = tmp_path / "cost.sqlite"
    SqliteCostStore(path).upsert([first, second], [recorded(first, [hold("team-a")])])
    out = tmp_path / "export"
    assert main(["cost", "export", "--out", str(out), "--store", str(path)]) == 0
    said = capsys.readouterr().out
    assert "GPU holdings recorded for 1 node-interval(s)" in said, said
    assert "1 node-interval(s) had no GPU holdings recorded: each is one unallocated row with x_Status " \
        "no-holdings" in said, said  # fmt: skip
    import pyarrow.parquet as pq

    table = pq.read_table(out / "billing_period=2026-11" / "focus.parquet").to_pylist()
    assert [(r["x_Tenant"], r["x_Status"]) for r in table] == [
        ("team-a", "ok"),
        ("unallocated", "no-holdings"),
    ]
