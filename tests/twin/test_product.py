"""twin/product.py: a run read back through the collector's store (a real SQLite store the collector's own
class writes) and the ledger's rules (window_sums over a client answering as Prometheus' instant queries
do; the real Prometheus path runs in tests/local/test_twin_on_local.py). Each figure where it holds, and
each way it is read short or not at all: an error or an `incomplete` line naming it, never a zero."""

from __future__ import annotations

import time
from datetime import timedelta
from decimal import Decimal

import pytest

from gpu_finops.cost.store import SqliteCostStore, StoreError
from gpu_finops.facts import timeouts
from gpu_finops.ledger import source
from tests.gpu_finops.cost.focus_fixtures import T0, record
from twin import product
from twin.cli_twin import product_line

START = T0.timestamp()
FLEET = lambda n, p: n in {"n0", "n1"}  # noqa: E731


@pytest.mark.parametrize(
    ("start", "end", "window"),
    [(125, 181, (120, 240)), (120, 180, (120, 180)), (119.5, 120.5, (60, 180))],
)
def test_the_window_is_the_whole_steps_covering_the_run(start, end, window) -> None:
    assert product.covering_window(start, end, 60) == window


def _store(tmp_path, records) -> str:
    path = tmp_path / "costs.sqlite"
    s = SqliteCostStore(path)
    s.upsert(records)
    s.close()
    return f"sqlite:{path}"


def _minutes(node: str, n: int, **kw) -> list:
    return [record(node, start=T0 + timedelta(minutes=i), **kw) for i in range(n)]


def _collector(spec: str, static=("n0", "n1"), fleet=FLEET, compression=60.0) -> dict:
    return product.collector_figures(spec, START, START + 120, compression, fleet, set(static), 60)


def test_collector_records_of_the_fleets_nodes_in_trace_dollars(tmp_path) -> None:
    spec = _store(tmp_path, [*_minutes("n0", 3), *_minutes("n1", 3), *_minutes("other", 3)])
    f = _collector(spec)
    # two intervals of the window (the third starts at its end), two nodes; the other node counted apart
    assert (f["records"], f["nodes"], f["other_nodes_records"]) == (4, 2, 2)
    assert f["cost_dollars"] == pytest.approx(4 * 0.031017 * 60)
    assert f["idle_dollars"] == pytest.approx(4 * 0.031017 * (1 - 0.4582) * 60)
    assert f["instance_hours"] == pytest.approx(4 / 60 * 60)
    assert f["statuses"] == {"ok": 4} and f["incomplete"] == []


def test_a_karpenter_pools_node_is_the_fleets_by_its_nodepool(tmp_path) -> None:
    spec = _store(tmp_path, _minutes("ip-10-0-0-1", 2))
    f = _collector(spec, static=(), fleet=lambda n, p: p in {"gpu-spot"}, compression=1.0)
    assert (f["records"], f["other_nodes_records"], f["incomplete"]) == (2, 0, [])


def test_an_unpriced_record_makes_the_cost_unknown_not_smaller(tmp_path) -> None:
    spec = _store(
        tmp_path, [record("n0", start=T0), record("n0", start=T0 + timedelta(minutes=1), cost=None)]
    )
    f = _collector(spec, static=("n0",), compression=1.0)
    assert f["cost_dollars"] is None and f["idle_dollars"] is None
    assert (f["unpriced_records"], f["records_without_idle_cost"]) == (1, 1)
    line = product_line({"window": {"wall_seconds": 120}, "ledger": {"error": "x"}, "collector": f})
    assert (
        "cost unknown (unpriced records), idle unknown (1 records without an idle cost; statuses other than "
        "ok: no-rate 1)" in line
    ), line


def test_a_static_nodes_missing_interval_is_named_and_the_figures_cover_the_rest(tmp_path) -> None:
    spec = _store(tmp_path, [*_minutes("n0", 2), record("n1", start=T0 + timedelta(minutes=1))])
    f = _collector(spec)
    assert f["records"] == 3 and f["incomplete"] == [
        "1 of 4 static node-intervals have no record, e.g. n1@10:00Z"
    ]
    line = product_line({"window": {"wall_seconds": 120}, "ledger": {"error": "x"}, "collector": f})
    assert line.endswith("INCOMPLETE: 1 of 4 static node-intervals have no record, e.g. n1@10:00Z"), line


def test_a_node_interval_recorded_twice_is_named(tmp_path) -> None:
    twice = record("n0", start=T0)
    other_id = type(twice)(**{**twice.to_dict(), "ResourceId": "i-replaced"})
    spec = _store(tmp_path, [*_minutes("n0", 2), other_id])
    f = _collector(spec, static=("n0",))
    assert f["incomplete"] == ["1 node-intervals have more than one record, e.g. n0@10:00Z"], f


def test_only_other_nodes_records_are_an_error_not_zero_dollars(tmp_path) -> None:
    spec = _store(tmp_path, _minutes("other", 3))
    with pytest.raises(
        product.ProductReadError, match=r"no record of the fleet's nodes in sqlite:.* \(2 of other nodes\)"
    ):
        _collector(spec)


def test_without_the_interval_at_the_runs_end_it_waits_then_names_the_interval_and_store(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(timeouts, "PRODUCT_SETTLE", 0.2)
    spec = _store(tmp_path, _minutes("n0", 1))  # [T0, T0+60) only; the run ends at T0+120
    out = product.product_figures("http://127.0.0.1:9", spec, START, START + 120, 1.0, {"n0"}, set(), 60)
    err = out["collector"]["error"]
    assert "the collector's records of its interval ending 2026-11-30T10:02:00Z in " + spec in err, err
    assert err.endswith("last observation: 0"), err


def test_a_store_that_is_not_there_is_said_at_once_not_waited_on(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(timeouts, "PRODUCT_SETTLE", 60.0)
    t = time.monotonic()
    with pytest.raises(Exception, match="nowhere.sqlite") as caught:
        _collector(f"sqlite:{tmp_path / 'nowhere.sqlite'}")
    assert time.monotonic() - t < 10, caught.value


class Prometheus:
    """Answers the instant queries window_sums and the settle wait send, as Prometheus' API would: rows of
    (labels, exact value). `evaluated` is the latest evaluation's timestamp; the rest are the window's sums."""

    def __init__(self, url: str, retry_for: float = 0.0, *, evaluated: float | None = START + 120,
                 installed: str = "64", count: int = 2, buckets: dict | None = None) -> None:  # fmt: skip
        self.url, self.evaluated, self.installed, self.count = url, evaluated, installed, count
        self.buckets = {"free": "40", "allocated_training": "24"} if buckets is None else buckets

    def query_exact(self, promql: str, at):
        if promql.startswith("timestamp("):
            return [] if self.evaluated is None else [({}, Decimal(str(self.evaluated)))]
        if promql.startswith("sum_over_time("):
            return [({}, Decimal(self.installed))]  # e.g. two evaluations of 32 installed GPUs
        if promql.startswith("count_over_time("):
            return [({}, Decimal(self.count))]
        if "by (input)" in promql:
            return [({"input": n}, Decimal(1)) for n in (*source.KSM_INPUTS, *source.DCGM_INPUTS)]
        if promql.startswith("sum by (bucket)"):
            return [({"bucket": b}, Decimal(v)) for b, v in self.buckets.items()]
        raise AssertionError(f"unexpected query {promql}")


def _prometheus(monkeypatch, **answers) -> None:
    monkeypatch.setattr(source, "RangeClient", lambda url, retry_for: Prometheus(url, **answers))


def test_ledger_rules_buckets_in_trace_gpu_hours(monkeypatch) -> None:
    _prometheus(monkeypatch)
    f = product.ledger_figures("http://prom", START, START + 120, 60.0, 60)
    assert (f["samples"], f["expected_samples"], f["incomplete"]) == (2, 2, [])
    assert f["installed_gpu_hours"] == pytest.approx(64 * 60 / 3600 * 60)  # 32 GPUs x 2 wall min x 60
    assert f["bucket_gpu_hours"]["free"] == pytest.approx(40 / 60 * 60)
    assert f["buckets_sum_percent"] == pytest.approx(100.0)
    assert f["missing_inputs"] == []


def test_a_missed_evaluation_is_named_with_the_figures_it_leaves(monkeypatch) -> None:
    _prometheus(monkeypatch, installed="96", count=3, evaluated=START + 240)
    f = product.ledger_figures("http://prom", START, START + 240, 1.0, 60)
    assert f["incomplete"] == ["3 of 4 evaluations: installed and buckets cover those"]


def test_more_evaluations_than_intervals_are_named_too(monkeypatch) -> None:
    _prometheus(monkeypatch, installed="160", count=5, evaluated=START + 240)
    f = product.ledger_figures("http://prom", START, START + 240, 1.0, 60)
    assert f["incomplete"] == ["5 evaluations in 4 intervals: installed and buckets count the extra ones too "
                               "(a second Prometheus, or the rules loaded twice?)"]  # fmt: skip


def test_a_record_that_is_not_the_collectors_in_the_last_interval_ends_the_wait_at_once(
    tmp_path, monkeypatch
) -> None:
    import sqlite3

    monkeypatch.setattr(timeouts, "PRODUCT_SETTLE", 60.0)
    spec = _store(tmp_path, [*_minutes("n0", 2)])
    db = sqlite3.connect(tmp_path / "costs.sqlite")
    db.execute("UPDATE cost_records SET x_GpuCount = 'abc' WHERE ChargePeriodStart = '2026-11-30T10:01:00Z'")
    db.commit()
    db.close()
    t = time.monotonic()
    with pytest.raises(StoreError, match="x_GpuCount"):
        _collector(spec, static=("n0",))
    assert time.monotonic() - t < 10


def test_a_failure_before_either_read_is_that_instruments_error_not_the_runs(tmp_path, monkeypatch) -> None:
    def broken() -> int:
        raise ValueError("gpu_finops/ledger/rules.yaml: no groups")

    monkeypatch.setattr(product, "rules_step", broken)
    spec = _store(tmp_path, _minutes("n0", 2))
    out = product.product_figures("http://prom", spec, START, START + 120, 1.0, {"n0"}, set(), 0)
    assert out["ledger"] == {"error": "ValueError: gpu_finops/ledger/rules.yaml: no groups"}
    assert out["collector"]["error"].startswith("ZeroDivisionError"), out
    assert product_line(out).startswith(
        "product over ? wall s: ledger rules NOT READ (ValueError: gpu_finops/ledger/rules.yaml"
    )


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        (
            {"installed": "0"},
            r'fleet:ledger_rung_gpus:sum\{rung="installed"\} summed to 0 over 2 evaluations: no GPU installed',
        ),
        ({"installed": "NaN"}, r'rung="installed"\} summed to NaN over the window: not a figure'),
        ({"installed": "Inf"}, r'rung="installed"\} summed to Infinity over the window: not a figure'),
        ({"buckets": {"free": "NaN"}}, r'fleet:ledger_bucket_gpus:sum\{bucket="free"\} summed to NaN'),
        ({"buckets": {}}, r"no fleet:ledger_bucket_gpus:sum series over the window"),
    ],
)
def test_ledger_sums_that_are_not_figures_are_errors_naming_the_series(monkeypatch, answers, message) -> None:
    _prometheus(monkeypatch, **answers)
    with pytest.raises(product.ProductReadError, match=message):
        product.ledger_figures("http://prom", START, START + 120, 1.0, 60)


def test_ledger_rules_not_evaluated_past_the_run_are_an_error_naming_the_series(
    monkeypatch, tmp_path
) -> None:
    monkeypatch.setattr(timeouts, "PRODUCT_SETTLE", 0.2)
    # the last evaluation is a step and a second before the window's end: the window's last minute is unread
    _prometheus(monkeypatch, evaluated=START + 59)
    spec = _store(tmp_path, _minutes("n0", 2))
    out = product.product_figures("http://prom", spec, START, START + 120, 1.0, {"n0"}, set(), 60)
    err = out["ledger"]["error"]
    assert "the ledger rules' evaluation in the run's last minute" in err and "in http://prom" in err, err
    assert err.endswith(f" | last observation: {START + 59}"), err
    assert out["collector"]["records"] == 2  # one instrument failing leaves the other's reading
    line = product_line(out)
    assert "ledger rules NOT READ (WaitTimeout: " in line and "collector 2 records of 1 nodes" in line, line
    assert "\n" not in line and f" | last observation: {START + 59}" in line, line
