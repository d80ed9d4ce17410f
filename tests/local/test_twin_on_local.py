"""The fleet twin on the local target, at a size CI affords: the known M/M/c case against the exact queue on
its own sample path (and Erlang C beside it), the borrowing case, and the whole path on 64 nodes.

Why the M/M/c case is checked against the sample path and not Erlang C alone: at c = 16 and rho = 0.8 the
mean wait of one run of a few hundred jobs spreads more than its own size (tests/twin/test_theory.py shows
it; successive waits are correlated), so a fair test of the formula needs tens of thousands of jobs
(twin.theory.jobs_needed). The exact FIFO queue with 16 servers fed the run's own arrivals and the hold
times Kueue gave each job is what the formula averages over; the twin must agree with it job for job up to
the control plane's latency. tests/twin/test_theory.py checks that queue against Erlang C.

How many jobs, and the latency. Because the twin is compared with the exact queue on its own path, the
sampling spread of the mean wait (Erlang C's test would need about 150,000 jobs) cancels: what is left is
the control plane's latency, which does not shrink with more jobs. It is measured in the run, not allowed
for (twin/mmc_claim.py): the mean latency of the jobs that found a GPU free, and the mean hand-over from a
Workload's Finished to the next admission; the exact queue is fed the arrivals shifted by the first and the
holds lengthened by the second, and must then predict the waits on the mean and job by job. A stated
allowance (1.5 wall s an admission) did this before and failed on a loaded machine (2026-12-02, load
average 18 to 20: the control plane lengthened each hold by 2.6 wall s and 101 of 150 jobs waited), so the
case was in `make twin-test` only. 300 jobs: seed 29's arrivals queue 75 jobs with the trace's durations
(the claim needs 20), and give tens of samples of each latency (it needs 10)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assertions.verdict import require
from local.cluster.product import prometheus_url, store_path
from twin import fleet as fleet_mod
from twin.cli_twin import product_line
from twin.generate import TenantLoad, erlang_trace, generate
from twin.mmc_claim import check_mmc, from_readout
from twin.readout import readout
from twin.replay import TICK, replay
from twin.theory import mmc_wait
from twin.trace import Trace, TraceJob

# `make test` runs the borrowing case (103 s on 2 cores, after the ledger module) and the M/M/16 case at 300
# jobs; `make twin-test` (GPU_FINOPS_TWIN_LIVE=1) runs the 64-node whole path too.
# They were out of `make test` while the borrowing case failed after the ledger module: that
# module's kwok nodes were left in the session's target and the twin's ledger counted their GPUs free for
# as long as each policy's run lasted. The ledger module now removes them, and the twin counts only its
# fleet's nodes (twin/accounting.py), naming any other GPU node in `ledger.foreign_gpu_nodes`.
FULL = os.environ.get("GPU_FINOPS_TWIN_LIVE") == "1"

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(1500)]
EXAMPLES = Path(fleet_mod.__file__).with_name("examples")
ERLANG_COMPRESSION, MEAN_SERVICE = 60.0, 600.0  # 10 s wall a job
ERLANG_JOBS = 300  # 230 wall s of arrivals (module docstring: why this many)


@pytest.fixture(scope="module")
def twin_target(local_cluster):
    """The local target; after the module, the shipped queues back and the twin's ClusterQueues gone."""
    yield local_cluster
    from infra.objects.kueue import kueue_objects
    from twin.prepare import set_queues

    set_queues(local_cluster.kube(), kueue_objects(local_cluster.config))


HANDOVER_WALL_MAX = (
    10.0  # wall seconds from a job's end to the admission of the job that waited for its quota
)


def _handover_gpu_hours(result: dict, tenant: str, wave: int) -> float:
    """GPU-hours between the first wave's ends and the second wave's admissions, the k-th end paired with the
    k-th admission (one GPU a job; Kueue admits in the order quota returns). Every job must have both times."""
    rows = [x for x in result["jobs"] if x["tenant"] == tenant]
    assert all(x["start_s"] is not None and x["end_s"] is not None for x in rows), rows
    rows.sort(key=lambda x: x["start_s"])
    ends = sorted(x["end_s"] for x in rows[:wave])
    starts = sorted(x["start_s"] for x in rows[wave:])
    assert len(starts) == wave and min(starts) >= min(ends), (ends, starts)
    return sum(max(s - e, 0.0) for e, s in zip(ends, starts, strict=True)) / 3600


def _span_s(result: dict) -> float:
    """Trace seconds from the run's first job start to its last job end."""
    rows = result["jobs"]
    assert all(x["start_s"] is not None and x["end_s"] is not None for x in rows), rows
    return max(x["end_s"] for x in rows) - min(x["start_s"] for x in rows)


def _burst(tenants: tuple[str, ...], jobs: int, duration: float) -> Trace:
    return Trace(30.0, 60.0, None, tenants, tuple(
        TraceJob(f"burst-{i:03d}", tenants[0], 0.0, 1, duration) for i in range(jobs)
    ))  # fmt: skip


def test_strict_quota_leaves_the_other_tenants_gpus_idle_borrowing_uses_them(twin_target) -> None:
    local_cluster = twin_target
    fleet = fleet_mod.load(EXAMPLES / "fleet-borrowing.yaml")
    duration = 600.0  # trace seconds: 20 s on the wall
    trace = _burst(("team-a", "team-b"), 32, duration)
    strict = readout(replay(local_cluster.kube(), fleet, trace, "strict", prometheus_url=prometheus_url(),
                            store=f"sqlite:{store_path(local_cluster)}"))  # fmt: skip
    borrow = readout(replay(local_cluster.kube(), fleet, trace, "borrow"))
    a_strict, a_borrow = strict["tenants"]["team-a"], borrow["tenants"]["team-a"]
    # strict: team-a holds exactly its 16 and team-b's 16 stay idle while 16 of team-a's jobs wait
    assert a_strict["peak_admitted_gpus"] == 16 and strict["ledger"]["pending_peak"] >= 16
    assert a_strict["wait_p95_s"] >= 0.9 * duration
    # the product's own diagnosis at the peak names admission (quota) as what the waiting jobs wait for
    assert strict["diagnose_at_peak"]["first_causes"].get("admission", 0) >= 1, strict["diagnose_at_peak"]
    # ... reading DCGM from the target's Prometheus (the GPU simulator's exporter)
    assert strict["diagnose_at_peak"]["dcgm"] == "read", strict["diagnose_at_peak"]
    # borrowing: the same burst takes all 32 at once and nothing waits a job's length
    assert a_borrow["peak_admitted_gpus"] == 32 and a_borrow["wait_p99_s"] < 0.5 * duration
    free = lambda r: sum(v for b, v in r["ledger"]["bucket_gpu_hours"].items() if b.startswith("free_"))  # noqa: E731
    # strict idles team-b's 16 GPUs for both waves: at least 16 x 2 x 600 s = 5.33 GPU-hours more free than
    # borrowing (less 10 %: borrowing's 32 pods may start a little later than strict's 16). At most, team-b's
    # 16 GPUs idle for strict's whole span (its first job's start to its last job's end, from the Workloads'
    # own times), plus strict's handover: its second wave is admitted only as the first wave's quota comes
    # back, and the GPUs a finished job left stay free until Kueue admits the next. Both stretch with the
    # control plane's latency (a loaded machine made the span 1,560 trace s of 1,200 once), which the
    # difference of the two runs does not cancel, so they are measured, not assumed; the handover is bounded
    # at HANDOVER_WALL_MAX wall seconds a job.
    handover = _handover_gpu_hours(strict, "team-a", 16)
    span = _span_s(strict)
    extra = free(strict) - free(borrow)
    print(
        f"free GPU-hours: strict {free(strict):.2f}, borrow {free(borrow):.2f}, difference {extra:.2f}:"
        f" at least 5.33, at most 16 x span {span:.0f} s + handover {handover:.2f}"
    )
    assert span >= 2 * duration, span  # the second wave ran after the first, not beside it
    assert handover <= 16 * HANDOVER_WALL_MAX * trace.compression / 3600, handover
    assert 0.9 * 16 * 2 * duration / 3600 <= extra <= 1.1 * (16 * span / 3600 + handover), (
        extra,
        span,
        handover,
    )
    _the_product_read_the_same_run(strict, 32, len(fleet.node_names()))
    assert borrow["product"] == {}  # not asked for
    # installed is the fleet's 32 GPUs for each run's length, to a tick: no other node's GPUs in it
    for r in (strict, borrow):
        led = r["ledger"]
        assert led["installed_gpu_hours"] == pytest.approx(
            32 * r["run"]["trace_hours"], abs=32 * 2 * TICK * 60 / 3600
        ), (led["installed_gpu_hours"], r["run"], led["foreign_gpu_nodes"])


def test_kueue_is_an_mmc_queue_on_its_own_sample_path(twin_target) -> None:
    local_cluster = twin_target
    fleet = fleet_mod.load(EXAMPLES / "fleet-erlang.yaml")
    trace = erlang_trace(servers=16, load=0.8, mean_service_s=MEAN_SERVICE, jobs=ERLANG_JOBS,
                         compression=ERLANG_COMPRESSION, seed=29)  # fmt: skip
    r = readout(replay(local_cluster.kube(), fleet, trace, "strict"))
    verdict = check_mmc(from_readout(r, 16, ERLANG_COMPRESSION))
    ev = verdict.evidence
    print(
        f"M/M/16 at 0.8, {ev['jobs']} jobs: twin mean wait {ev['mean_wait_measured_s']} s, the exact queue with "
        f"the measured latency {ev['mean_wait_predicted_s']} s, Erlang C {mmc_wait(16, 0.8).mean * MEAN_SERVICE:.1f} s "
        f"(trace time); latency: admission {ev['admission_latency_mean_wall_s']} wall s, hand-over "
        f"{ev['handover_latency_mean_wall_s']} wall s ({ev['samples']})"
    )
    require(verdict)


@pytest.mark.skipif(not FULL, reason="6 minutes: `make twin-test` (GPU_FINOPS_TWIN_LIVE=1) runs it")
def test_the_small_twin_runs_the_whole_path(twin_target) -> None:
    local_cluster = twin_target
    fleet = fleet_mod.load(EXAMPLES / "fleet-small.yaml")
    loads = [
        TenantLoad(t, 60, training_median_s=1800, serving_mean_s=2700) for t in ("team-a", "team-b", "team-c")
    ]
    trace = generate(loads, horizon_s=2 * 3600, compression=120, seed=7)
    assert 250 <= len(trace.jobs) <= 450
    r = readout(replay(local_cluster.kube(), fleet, trace, "strict"))
    led = r["ledger"]
    assert led["buckets_sum_percent"] == pytest.approx(100.0, abs=0.01)
    hours = led["bucket_gpu_hours"]
    # 16 GPUs in the repair queue and 16 cordoned, for the whole run
    assert hours["unschedulable_repair_queue"] == pytest.approx(
        16 / 512 * led["installed_gpu_hours"], rel=0.01
    )
    assert hours["unschedulable_other"] == pytest.approx(hours["unschedulable_repair_queue"], rel=0.01)
    for name, t in r["tenants"].items():
        assert t["never_admitted"] == 0 and t["peak_admitted_gpus"] <= 160, (name, t)
        assert t["wait_p50_s"] <= t["wait_p95_s"] <= t["wait_p99_s"]
    assert r["run"]["condition_gap_max_s"] <= r["run"]["condition_gap_bound_s"]
    assert led["idle_dollars"] > 0


def _the_product_read_the_same_run(r: dict, gpus: int, nodes: int) -> None:
    """The ledger's rules in the target's Prometheus and the in-cluster collector read the run (twin/product.py)
    over the whole minutes covering it: every minute evaluated, the rules' buckets closing at 100 % of their
    installed, that installed the fleet's GPUs over the window except at the two edge minutes (before the
    fleet's nodes were scraped, or a previous fleet's still were), and a priced record of each of the fleet's
    nodes for every minute (the collector's window is the same whole minutes)."""
    p, c = r["product"], r["run"]["compression"]
    print(
        product_line(p), "| the twin's own:", round(r["ledger"]["installed_gpu_hours"], 2), "GPU-h installed"
    )
    minutes = round(p["window"]["wall_seconds"] / 60)
    led, col = p["ledger"], p["collector"]
    assert "error" not in led and "error" not in col, p
    assert led["samples"] >= minutes - 1, (led["samples"], p["window"])
    assert led["buckets_sum_percent"] == pytest.approx(100.0, abs=0.01), led
    per_minute = gpus * c / 60  # the fleet's trace GPU-hours in one wall minute
    assert abs(led["installed_gpu_hours"] - minutes * per_minute) <= 2 * per_minute, (led, p["window"])
    # (>=: a previous fleet's node of the same name may still be in an edge minute)
    assert col["nodes"] >= nodes and col["records"] >= nodes * minutes and col["incomplete"] == [], col
    assert col["cost_dollars"] is not None and col["cost_dollars"] > 0, col
