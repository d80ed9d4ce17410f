"""Compare: each policy's figures beside the first's, with deltas; one chart."""

from __future__ import annotations

from pathlib import Path

from twin.compare import chart, delta_lines, deltas


def _result(p95: float, idle: float, free: float) -> dict:
    tenant = {"wait_mean_s": p95 / 2, "wait_p50_s": 0.0, "wait_p95_s": p95, "wait_p99_s": p95 * 2,
              "preempted": 0, "requeued": 0}  # fmt: skip
    ledger = {"idle_dollars": idle, "stranded_gpus_peak": 0, "pending_peak": 3,
              "bucket_gpu_hours": {"free_placeable": free, "allocated_training_stepping": 10.0}}  # fmt: skip
    return {"tenants": {"team-a": tenant}, "ledger": ledger}


def test_deltas_are_against_the_first_policy() -> None:
    d = deltas({"strict": _result(3600, 50.0, 5.3), "borrow": _result(60, 20.0, 0.1)})
    assert d["baseline"] == "strict"
    wait = d["policies"]["borrow"]["tenants"]["team-a"]["wait_p95_s"]
    assert wait == {"value": 60, "delta": 60 - 3600}
    assert d["policies"]["borrow"]["ledger"]["idle_dollars"] == {"value": 20.0, "delta": -30.0}
    assert d["policies"]["strict"]["bucket_gpu_hours"]["free_placeable"]["delta"] == 0.0


def test_a_missing_figure_has_no_delta() -> None:
    a, b = _result(3600, 50.0, 5.3), _result(60, 20.0, 0.1)
    b["tenants"]["team-a"]["wait_p95_s"] = None  # nothing admitted under this policy
    assert deltas({"a": a, "b": b})["policies"]["b"]["tenants"]["team-a"]["wait_p95_s"]["delta"] is None


def test_the_chart_is_written(tmp_path: Path) -> None:
    path = chart({"strict": _result(3600, 50.0, 5.3), "borrow": _result(60, 20.0, 0.1)}, tmp_path / "c.svg")
    text = path.read_text()
    assert text.startswith("<?xml") and "Queue wait per tenant" in text and "ledger bucket" in text


def test_the_deltas_are_printed_against_the_baseline() -> None:
    strict, borrow = _result(3600, 50.0, 5.3), _result(60, 20.0, 0.1)
    borrow["ledger"]["stranded_gpus_peak"] = 2
    lines = delta_lines(deltas({"strict": strict, "borrow": borrow}))
    assert lines == [
        "borrow against strict:",
        "  team-a: wait mean -0.49 h, p95 -0.98 h, preempted +0",
        "  ledger: idle dollars -30.00, stranded GPUs at the peak +2",
        "  GPU-hours by bucket: free_placeable -5.20",
    ]


def test_a_bucket_only_one_policy_used_is_compared_as_zero_in_the_other() -> None:
    strict, borrow = _result(3600, 50.0, 5.3), _result(60, 20.0, 0.1)
    strict["ledger"]["bucket_gpu_hours"]["free_stranded"] = 1.5
    d = deltas({"strict": strict, "borrow": borrow})
    assert d["policies"]["borrow"]["bucket_gpu_hours"]["free_stranded"] == {"value": 0.0, "delta": -1.5}
