"""twin/product.py: a run read back through the collector's store (a real SQLite store the collector's own
class writes) and the ledger's rules (window_sums over a client answering as Prometheus' instant queries
do; the real Prometheus path runs in tests/local/test_twin_on_local.py)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from facts import timeouts
from finops.store import SqliteCostStore
from ledger import source
from tests.finops.focus_fixtures import T0, record
from twin import product

START = T0.timestamp()


@pytest.mark.parametrize(
    ("start", "end", "window"),
    [((125, 181), None, (120, 240)), ((120, 180), None, (120, 180)), ((119.5, 120.5), None, (60, 180))],
)
def test_the_window_is_the_whole_steps_covering_the_run(start, end, window) -> None:
    assert product.covering_window(*start) == window


def _store(tmp_path, records) -> str:
    path = tmp_path / "costs.sqlite"
    s = SqliteCostStore(path)
    s.upsert(records)
    s.close()
    return f"sqlite:{path}"


def _minutes(node: str, n: int, **kw) -> list:
    return [record(node, start=T0 + timedelta(minutes=i), **kw) for i in range(n)]


def test_collector_records_of_the_fleets_nodes_in_trace_dollars(tmp_path) -> None:
    spec = _store(tmp_path, [*_minutes("n0", 3), *_minutes("n1", 3), *_minutes("other", 3)])
    f = product.collector_figures(spec, START, START + 120, 60.0, lambda n, p: n in {"n0", "n1"})
    # two intervals of the window (the third starts at its end), two nodes; the other node counted apart
    assert (f["records"], f["nodes"], f["other_nodes_records"]) == (4, 2, 2)
    assert f["cost_dollars"] == pytest.approx(4 * 0.031017 * 60)
    assert f["idle_dollars"] == pytest.approx(4 * 0.031017 * (1 - 0.4582) * 60)
    assert f["instance_hours"] == pytest.approx(4 / 60 * 60)
    assert f["statuses"] == {"ok": 4}


def test_a_karpenter_pools_node_is_the_fleets_by_its_nodepool(tmp_path) -> None:
    spec = _store(tmp_path, _minutes("ip-10-0-0-1", 2))
    f = product.collector_figures(spec, START, START + 120, 1.0, lambda n, p: p in {"gpu-spot"})
    assert (f["records"], f["other_nodes_records"]) == (2, 0)


def test_an_unpriced_record_makes_the_cost_unknown_not_smaller(tmp_path) -> None:
    spec = _store(
        tmp_path, [record("n0", start=T0), record("n0", start=T0 + timedelta(minutes=1), cost=None)]
    )
    f = product.collector_figures(spec, START, START + 120, 1.0, lambda n, p: True)
    assert f["cost_dollars"] is None and f["idle_dollars"] is None
    assert (f["unpriced_records"], f["records_without_sm_active"]) == (1, 1)


def test_without_the_interval_at_the_runs_end_it_waits_then_names_the_store(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(timeouts, "PRODUCT_SETTLE", 0.2)
    spec = _store(tmp_path, _minutes("n0", 1))  # [T0, T0+60) only; the run ends at T0+120
    out = product.product_figures("http://127.0.0.1:9", spec, START, START + 120, 1.0, {"n0"}, set())
    err = out["collector"]["error"]
    assert "the collector's record of the interval ending 10:02:00Z" in err and spec in err, err


class Prometheus:
    """Answers the instant queries window_sums and the settle wait send, as Prometheus' API would: rows of
    (labels, exact value). `evaluated` is the latest evaluation's timestamp."""

    def __init__(self, url: str, retry_for: float = 0.0, *, evaluated: float = START + 120) -> None:
        self.url, self.evaluated = url, evaluated

    def query_exact(self, promql: str, at):
        if promql.startswith("timestamp("):
            return [({}, Decimal(str(self.evaluated)))]
        if promql.startswith("sum_over_time("):
            return [({}, Decimal(32 * 2))]  # two evaluations of 32 installed GPUs
        if promql.startswith("count_over_time("):
            return [({}, Decimal(2))]
        if "by (input)" in promql:
            return [({"input": n}, Decimal(1)) for n in (*source.KSM_INPUTS, *source.DCGM_INPUTS)]
        if promql.startswith("sum by (bucket)"):
            return [({"bucket": "free"}, Decimal(40)), ({"bucket": "allocated_training"}, Decimal(24))]
        raise AssertionError(f"unexpected query {promql}")


def test_ledger_rules_buckets_in_trace_gpu_hours(monkeypatch) -> None:
    monkeypatch.setattr(source, "RangeClient", Prometheus)
    f = product.ledger_figures("http://prom", START, START + 120, 60.0)
    assert f["samples"] == 2
    assert f["installed_gpu_hours"] == pytest.approx(64 * 60 / 3600 * 60)  # 32 GPUs x 2 wall min x 60
    assert f["bucket_gpu_hours"]["free"] == pytest.approx(40 / 60 * 60)
    assert f["buckets_sum_percent"] == pytest.approx(100.0)
    assert f["missing_inputs"] == []


def test_ledger_rules_not_evaluated_past_the_run_are_an_error_naming_the_series(
    monkeypatch, tmp_path
) -> None:
    monkeypatch.setattr(timeouts, "PRODUCT_SETTLE", 0.2)
    # the last evaluation is a step and a second before the window's end: the window's last minute is unread
    monkeypatch.setattr(source, "RangeClient", lambda url, retry_for: Prometheus(url, evaluated=START + 59))
    spec = _store(tmp_path, _minutes("n0", 2))
    out = product.product_figures("http://prom", spec, START, START + 120, 1.0, {"n0"}, set())
    err = out["ledger"]["error"]
    assert "the ledger rules' evaluation at the run's end" in err and "http://prom" in err, err
    assert out["collector"]["records"] == 2  # one instrument failing leaves the other's reading
