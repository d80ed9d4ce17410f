"""The M/M/c claim's checker: a world where Kueue is a first-come-first-served queue with a noisy control
plane holds; each clause is broken by a world that breaks exactly it.

Worlds are simulated here: Poisson arrivals and exponential holds at c = 16, rho = 0.8 (the live case's
shape, at 60x), each admission delayed by a random control-plane latency, each freed slot handed over after
another. `order` chooses which waiting job a freed slot goes to.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import math
import random
import statistics

import pytest

from twin.mmc_claim import (
    MIN_SAMPLES,
    ORDER_SLACK_WALL,
    MmcInputError,
    MmcJob,
    MmcRun,
    check_mmc,
    from_readout,
    measured_latency,
    predicted_waits,
    served_first_come_first_served,
)

C, RHO, MEAN_HOLD, COMPRESSION = 16, 0.8, 600.0, 60.0


def job(
    name: str,
    submitted: float | None,
    admitted: float | None,
    finished: float | None,
    queued: float | None = None,
) -> MmcJob:
    """One job of the case as the readout gives it: the tenant's, one GPU, never evicted; its Workload
    queued when it could first be admitted (default: at submission)."""
    queued = submitted if queued is None else queued
    return MmcJob(name, submitted, admitted, finished, queued, tenant="erlang", gpus=1, evictions=0)


def simulate(
    *,
    jobs: int = 300,
    servers: int = C,
    usable: int | None = None,
    rho: float = RHO,
    order: str = "fifo",
    latency_wall: tuple[float, float] = (0.2, 1.5),
    seed: int = 29,
    compression: float = COMPRESSION,
) -> MmcRun:
    """`usable` slots really serve (default: all), at `rho` of `servers`; each admission waits a latency drawn
    uniformly from `latency_wall` (wall s), as does each hand-over of a freed slot."""
    rng = random.Random(seed)
    t, arrivals, holds = 0.0, [], []
    for _ in range(jobs):
        t += rng.expovariate(rho * servers / MEAN_HOLD)
        arrivals.append(t)
        holds.append(rng.expovariate(1 / MEAN_HOLD))
    lat = lambda: rng.uniform(*latency_wall) * compression  # noqa: E731
    ready = [a + lat() for a in arrivals]  # when each job's Workload could first be admitted
    slots = [float("-inf")] * (usable or servers)  # when each slot can next be handed to a job
    pending = list(range(jobs))
    start = [0.0] * jobs
    while pending:
        s = heapq.heappop(slots)
        waiting = [i for i in pending if ready[i] <= s]
        if not waiting:
            i = min(pending, key=lambda k: ready[k])
        elif order == "fifo":  # as Kueue orders a queue: by the Workload's creation
            i = min(waiting, key=lambda k: ready[k])
        elif order == "lifo":
            i = max(waiting, key=lambda k: ready[k])
        elif order == "shortest":
            i = min(waiting, key=lambda k: holds[k])
        elif order == "random":
            i = rng.choice(waiting)
        elif order.startswith("starve:"):  # that job only once no other waits
            victim = int(order.split(":")[1])
            i = min([k for k in waiting if k != victim] or waiting, key=lambda k: ready[k])
        else:
            raise ValueError(order)
        pending.remove(i)
        start[i] = max(s, ready[i])
        heapq.heappush(slots, start[i] + holds[i] + lat())
    return MmcRun(servers, compression, tuple(
        job(f"j{i:03d}", arrivals[i], start[i], start[i] + holds[i], ready[i]) for i in range(jobs)
    ))  # fmt: skip


def failed(run: MmcRun) -> tuple[str, ...]:
    return check_mmc(run).failed_clauses


def test_a_fifo_queue_with_a_noisy_control_plane_holds() -> None:
    v = check_mmc(simulate())
    assert v.holds, v.render()
    assert (
        v.evidence["samples"]["admission"] >= MIN_SAMPLES and v.evidence["samples"]["handover"] >= MIN_SAMPLES
    )


@pytest.mark.parametrize("seed", range(8))
def test_it_holds_on_other_sample_paths_and_slower_control_planes(seed: int) -> None:
    v = check_mmc(simulate(seed=seed, latency_wall=(0.5, 4.0)))
    assert v.holds, v.render()


def test_the_latencies_are_measured_from_the_slots() -> None:
    """A world with fixed latencies: every sample is exactly that latency, so the exact queue with them
    predicts every wait exactly."""
    run = simulate(latency_wall=(1.0, 1.0))
    lat = measured_latency(run)
    assert set(round(x, 6) for x in lat.admission) == {60.0}
    assert set(round(x, 6) for x in lat.handover) == {60.0}
    assert all(m == pytest.approx(p) for _, m, p in predicted_waits(run, lat))


def _edit(run: MmcRun, index: int, **change: object) -> MmcRun:
    jobs = list(run.jobs)
    jobs[index] = dataclasses.replace(jobs[index], **change)
    return dataclasses.replace(run, jobs=tuple(jobs))


def test_a_job_never_finished_is_named() -> None:
    run = _edit(simulate(), 5, finished_s=None)
    v = check_mmc(run)
    assert v.failed_clauses == ("every_job_admitted_and_finished",)
    assert "1 not: j005" in v.observed


def test_a_job_seen_twice_is_refused() -> None:
    run = simulate()
    run = dataclasses.replace(run, jobs=(*run.jobs, run.jobs[7]))
    assert "every_job_admitted_and_finished" in failed(run)
    assert "1 seen more than once: j007" in check_mmc(run).observed


def test_an_admission_before_its_submission_is_refused() -> None:
    run = simulate()
    j = run.jobs[40]
    v = check_mmc(_edit(run, 40, admitted_s=j.submitted_s - 1))
    assert "every_job_admitted_and_finished" in v.failed_clauses
    assert "1 out of order: j040" in v.observed


def test_a_gpu_past_the_quota_is_refused() -> None:
    """Kueue admitting a 17th job at once: the quota clause names the peak (the queue is then not c = 16)."""
    run = dataclasses.replace(simulate(servers=17), servers=C)
    assert "quota_filled_never_exceeded" in failed(run)
    assert "peak 17" in check_mmc(run).observed


def test_a_quota_never_filled_is_refused() -> None:
    run = dataclasses.replace(simulate(servers=15), servers=C)
    assert "quota_filled_never_exceeded" in failed(run)
    assert "peak 15" in check_mmc(run).observed


def test_a_path_that_never_queues_tests_nothing() -> None:
    v = check_mmc(simulate(rho=0.3, jobs=60))
    assert "the_path_queues" in v.failed_clauses
    assert "the_path_queues: " in v.observed


def test_a_stalled_control_plane_is_named_not_absorbed() -> None:
    v = check_mmc(simulate(latency_wall=(3.5, 5.0)))
    assert "latency_measured_and_bounded" in v.failed_clauses
    assert "mean admission latency <= 3.0 wall s" in v.render()


def test_too_few_admissions_to_measure_a_latency_from() -> None:
    """A burst at time 0 onto 4 slots: only 4 jobs find a slot free, too few to measure admission latency."""
    run = simulate(servers=4, jobs=40)
    burst = dataclasses.replace(run, jobs=tuple(dataclasses.replace(j, submitted_s=0.0) for j in run.jobs))
    burst = dataclasses.replace(burst, jobs=tuple(
        dataclasses.replace(j, admitted_s=max(j.admitted_s, 1.0)) for j in burst.jobs
    ))  # fmt: skip
    v = check_mmc(burst)
    assert "latency_measured_and_bounded" in v.failed_clauses
    assert f">= {MIN_SAMPLES} admission samples" in v.render()


def _held_back(usable: int, rho: float) -> MmcRun:
    """Kueue serving on `usable` of the 16 GPUs, with all 16 held once (one-second jobs at the first
    instant `usable` are held), so the peak is 16."""
    run = simulate(usable=usable, rho=rho)
    at = next(j.admitted_s for j in sorted(run.jobs, key=lambda j: j.admitted_s)
              if sum(1 for k in run.jobs if k.admitted_s <= j.admitted_s < k.finished_s) == usable)  # fmt: skip
    extras = tuple(job(f"x{i}", at, at, at + 1.0) for i in range(C - usable))
    return dataclasses.replace(run, jobs=run.jobs + extras)


def test_four_gpus_held_back_read_as_hand_overs_past_the_bound_and_are_refused() -> None:
    v = check_mmc(_held_back(12, rho=0.7))
    assert v.failed_clauses == ("latency_measured_and_bounded",), v.render()
    assert "mean handover latency <= 3.0 wall s" in v.render()


def test_one_gpu_held_back_is_read_as_latency_the_stated_limit() -> None:
    """The limit twin/mmc_claim.py states: one GPU of 16 held back lengthens the measured hand-over by about
    a hold over 16, and the exact queue with that hand-over predicts the waits, so the claim holds."""
    true_handover = statistics.fmean((0.2, 1.5))  # the simulation's, wall s
    v = check_mmc(_held_back(15, rho=0.75))
    assert v.holds, v.render()
    assert v.evidence["handover_latency_mean_wall_s"] > true_handover + 0.4


def test_last_come_first_served_has_the_mean_but_not_the_order() -> None:
    v = check_mmc(simulate(order="lifo", rho=0.85))
    assert "served_first_come_first_served" in v.failed_clauses, v.render()
    assert (
        f"no waiting job overtaken by a younger one (ties: appeared within {ORDER_SLACK_WALL * COMPRESSION:.0f}"
        in v.render()
    )


@pytest.mark.parametrize("order", ["lifo", "shortest", "random"])
@pytest.mark.parametrize("seed", [29, 5, 0])
def test_any_other_service_order_is_refused_by_the_order_not_only_the_mean(order: str, seed: int) -> None:
    """A red team's finding: last-come-first-served and shortest-job-first passed the job-by-job clause on
    the live case's own shape (its 5 wall s are 300 trace s, five times the mean wait)."""
    v = check_mmc(simulate(order=order, seed=seed))
    assert "served_first_come_first_served" in v.failed_clauses, v.render()
    assert "overtakings" in v.render()


def test_one_starved_job_is_named_as_overtaken() -> None:
    """j253 is served only once no other job waits (35.6 wall s later than first come, first served would
    have): the rest of the queue runs in order, and every other clause holds."""
    v = check_mmc(simulate(order="starve:253", seed=4))
    assert v.failed_clauses == ("served_first_come_first_served",), v.render()
    assert "(1 jobs overtaken): j253 (queued" in v.render()


def test_workloads_within_the_slack_of_each_other_may_be_served_in_either_order() -> None:
    """Kueue orders by creationTimestamp (one-second resolution): two Workloads 0.5 wall s apart tie."""
    run = simulate()
    waited = [j for j in sorted(run.jobs, key=lambda j: j.queued_s) if j.admitted_s - j.queued_s > 200]
    a, b = waited[0], next(j for j in waited[1:] if j.queued_s > waited[0].queued_s)
    queued = a.queued_s + 0.5 * COMPRESSION
    tie = _edit(
        run,
        run.jobs.index(b),
        submitted_s=queued - (b.queued_s - b.submitted_s),  # b's own lag, kept
        queued_s=queued,
        admitted_s=a.admitted_s - 0.9 * COMPRESSION,
    )
    assert "served_first_come_first_served" not in failed(tie), check_mmc(tie).render()


def test_a_job_whose_workload_was_not_seen_cannot_be_ordered() -> None:
    v = check_mmc(_edit(simulate(), 7, queued_s=None))
    assert "served_first_come_first_served" in v.failed_clauses
    assert "expected every job's Workload seen appearing; observed 1 not: j007" in v.render()


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_a_time_that_is_not_finite_is_named_and_silences_nothing(bad: float) -> None:
    """A red team's finding: one row of infinities made inf - inf = NaN a latency sample and a wait, and
    every bound compared against NaN passed, so a last-come-first-served run and an 8 wall s admission
    latency were both accepted."""
    ghost = job("ghost", bad, bad, bad, bad)
    lifo = simulate(order="lifo", seed=5)
    v = check_mmc(dataclasses.replace(lifo, jobs=(*lifo.jobs, ghost)))
    assert "expected every time a finite number of seconds; observed 1 not: ghost" in v.render()
    assert "served_first_come_first_served" in v.failed_clauses
    slow = simulate(latency_wall=(8.0, 8.0))
    v = check_mmc(dataclasses.replace(slow, jobs=(*slow.jobs, ghost)))
    assert "latency_measured_and_bounded" in v.failed_clauses, v.render()
    assert "nan" not in str(v.evidence)


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"tenant": "intruder"}, "expected one tenant; observed 2: erlang, intruder"),
        ({"tenant": None}, "expected every job's tenant observed; observed 1 without: j011"),
        ({"gpus": 2}, "expected every job 1 GPU; observed 1 not: j011 (2)"),
        ({"gpus": None}, "expected every job 1 GPU; observed 1 not: j011 (None)"),
        (
            {"evictions": 1},
            "expected no job evicted (preempted or requeued), each observed; observed 1: j011 (1)",
        ),
        (
            {"evictions": None},
            "expected no job evicted (preempted or requeued), each observed; observed 1: j011 (None)",
        ),
    ],
)
def test_a_job_outside_the_case_is_refused(change: dict, reason: str) -> None:
    """A red team's finding: another tenant's 2-GPU jobs, or a preempted job whose requeue wait reads as its
    hold, passed through from_readout unseen."""
    v = check_mmc(_edit(simulate(), 11, **change))
    assert "the_case_is_one_tenants_one_gpu_jobs" in v.failed_clauses
    assert reason in v.render()


def test_an_empty_run_is_named() -> None:
    v = check_mmc(MmcRun(C, COMPRESSION, ()))
    assert "expected jobs in the run; observed none" in v.render()
    assert not v.holds


@pytest.mark.parametrize(
    "servers, compression, field",
    [
        (0, 60.0, "servers"),
        (-1, 60.0, "servers"),
        (16.0, 60.0, "servers"),
        (True, 60.0, "servers"),
        (16, 0, "compression"),
        (16, -60.0, "compression"),
        (16, math.inf, "compression"),
        (16, math.nan, "compression"),
        (16, "60", "compression"),
    ],
)
def test_parameters_outside_the_case_are_refused_naming_them(servers, compression, field) -> None:
    with pytest.raises(MmcInputError, match=f"^{field}: expected"):
        MmcRun(servers, compression, ())


RUN = {"compression": 60.0}  # a readout's run, as it states its compression


def _readout_row(i: int, **change: object) -> dict:
    row = {"id": f"t{i}", "tenant": "erlang", "gpus": 1, "submitted_s": 1.0 + i, "queued_s": 1.2 + i,
           "start_s": 2.0 + i, "end_s": 5.0 + i, "preempted": 0, "requeued": 0}  # fmt: skip
    row.update(change)
    return row


def test_from_readout_reads_the_rows_of_a_run() -> None:
    rows = {
        "run": {"compression": 60.0},
        "jobs": [_readout_row(0), _readout_row(1, start_s=None, end_s=None)],
    }
    run = from_readout(rows, 16, 60.0)
    assert run.jobs == (
        MmcJob("t0", 1.0, 2.0, 5.0, 1.2, tenant="erlang", gpus=1, evictions=0),
        MmcJob("t1", 2.0, None, None, 2.2, tenant="erlang", gpus=1, evictions=0),
    )
    assert (run.servers, run.compression) == (16, 60.0)


def test_from_readout_counts_preemptions_and_requeues_as_evictions() -> None:
    run = from_readout({"run": RUN, "jobs": [_readout_row(0, preempted=1, requeued=1)]}, 16, 60.0)
    assert run.jobs[0].evictions == 2


def test_from_readout_refuses_a_compression_other_than_the_runs() -> None:
    """A red team's finding: the same failing run passed when checked at 120x instead of its own 60x."""
    with pytest.raises(
        MmcInputError, match=r"^compression: the readout's run states 60.0, the check was given 120.0"
    ):
        from_readout({"run": {"compression": 60.0}, "jobs": []}, 16, 120.0)


@pytest.mark.parametrize(
    "rows, message",
    [
        (
            {"run": RUN, "jobs": [_readout_row(0), {"id": "t1", "submitted_s": 1.0}]},
            "readout job row 1: missing start_s, end_s",
        ),
        (
            {"run": RUN, "jobs": [_readout_row(0, end_s="5")]},
            "readout job row 0 ('t0'): end_s is '5', not seconds",
        ),
        (
            {"run": RUN, "jobs": [_readout_row(0, start_s=True)]},
            "readout job row 0 ('t0'): start_s is True, not seconds",
        ),
        ({"run": RUN, "jobs": None}, "readout: expected a list of job rows under 'jobs', got NoneType"),
        ({"run": RUN}, "readout: expected a list of job rows under 'jobs', got NoneType"),
        ({"jobs": []}, "readout: expected the run's compression under 'run', found none"),
        ({"run": "x", "jobs": []}, "readout: expected the run's compression under 'run', found none"),
    ],
)
def test_from_readout_names_a_missing_or_odd_field(rows: dict, message: str) -> None:
    with pytest.raises(MmcInputError) as e:
        from_readout(rows, 16, 60.0)
    assert str(e.value) == message


def test_infinity_from_json_is_not_silently_accepted() -> None:
    rows = json.loads(
        json.dumps({"run": RUN, "jobs": [_readout_row(0), _readout_row(1, start_s=float("inf"))]})
    )
    v = check_mmc(from_readout(rows, 16, 60.0))
    assert "expected every time a finite number of seconds; observed 1 not: t1" in v.render()


def _pair(a_queued: float, a_admitted: float, b_queued: float, b_admitted: float) -> MmcRun:
    """Two jobs, each submitted 6 trace s before its Workload appeared, held 600 s."""
    return MmcRun(1, COMPRESSION, (
        job("a", a_queued - 6, a_admitted, a_admitted + 600, a_queued),
        job("b", b_queued - 6, b_admitted, b_admitted + 600, b_queued),
    ))  # fmt: skip


@pytest.mark.parametrize(
    "b_queued, b_admitted, overtaken",
    [
        (130.0, 500.0, False),  # appeared 0.5 wall s after a: a tie, either order
        (200.0, 990.0, False),  # admitted 0.17 wall s before a: one scheduling cycle
        (200.0, 970.0, True),  # admitted 0.5 wall s before a, appeared 1.7 s after: overtaken
        (200.0, 1100.0, False),  # first come, first served
    ],
)
def test_the_order_clause_on_one_pair(b_queued: float, b_admitted: float, overtaken: bool) -> None:
    """A red team's finding: a 1 wall s slack on admissions hid overtakings of up to 55 trace s; the
    admission side now allows one scheduling cycle."""
    misses = served_first_come_first_served(_pair(100.0, 1000.0, b_queued, b_admitted))
    assert bool(misses) is overtaken, misses
    if overtaken:
        assert (
            "1 overtakings (1 jobs overtaken): a (queued 100 s, admitted 1000 s) by b" in misses[0].observed
        )


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"queued_s": 1200.0}, "a (submitted 94 s, appeared 1200 s, admitted 1000 s)"),  # after its admission
        ({"queued_s": 50.0}, "a (submitted 94 s, appeared 50 s, admitted 1000 s)"),  # before its Job
        ({"queued_s": 500.0}, "a (submitted 94 s, appeared 500 s, admitted 1000 s)"),  # 6.8 wall s late
    ],
)
def test_a_workload_appearing_outside_its_jobs_life_is_refused(change: dict, reason: str) -> None:
    """A red team's finding: a Workload 'appearing' just before its admission emptied the order clause, so a
    last-come-first-served run held. It must appear after its Job, by its admission and within
    QUEUED_LAG_WALL_MAX of the Job."""
    run = _pair(100.0, 1000.0, 200.0, 970.0)
    run = dataclasses.replace(run, jobs=(dataclasses.replace(run.jobs[0], **change), run.jobs[1]))
    misses = served_first_come_first_served(run)
    assert [m.expected for m in misses] == [
        "every Workload appeared after its Job's submission, by its admission and within 300 trace s"
    ]
    assert misses[0].observed == f"1 not: {reason}"


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"gpus": True}, "expected every job 1 GPU; observed 1 not: j011 (True)"),
        ({"evictions": False}, "observed 1: j011 (False)"),
        ({"tenant": ""}, "expected every job's tenant observed; observed 1 without: j011 ('')"),
        ({"tenant": 1}, "expected every job's tenant observed; observed 1 without: j011 (1)"),
        ({"name": None}, "expected every job named; observed 1 not: None"),
    ],
)
def test_a_look_alike_value_is_not_taken_for_the_real_one(change: dict, reason: str) -> None:
    """A red team's finding: gpus=True, evictions=False, an empty or numeric tenant and a job without a
    name all passed."""
    assert reason in check_mmc(_edit(simulate(), 11, **change)).render()


def test_negative_counts_from_a_readout_are_not_evictions_summing_to_zero() -> None:
    run = from_readout({"run": RUN, "jobs": [_readout_row(0, preempted=-1, requeued=1)]}, 16, 60.0)
    assert run.jobs[0].evictions is None


@pytest.mark.parametrize("jobs", [None, [job("a", 1.0, 2.0, 3.0)], (job("a", 1.0, 2.0, 3.0), {"id": "b"})])
def test_jobs_that_are_not_a_tuple_of_jobs_are_refused_naming_them(jobs) -> None:
    with pytest.raises(MmcInputError, match="^jobs: expected a tuple of MmcJob, got "):
        MmcRun(C, COMPRESSION, jobs)
