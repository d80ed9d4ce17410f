"""The M/M/c claim's order clause: a queue served in any order but first come, first served is refused,
though its mean wait may be the exact queue's; ties within a scheduling cycle or a creationTimestamp's
second are not overtakings."""

from __future__ import annotations

import dataclasses

import pytest

from tests.twin.mmc_worlds import COMPRESSION, edit, failed, job, simulate
from twin.mmc_claim import ORDER_SLACK_WALL, MmcRun, check_mmc, served_first_come_first_served


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
    """last-come-first-served and shortest-job-first passed the job-by-job clause on
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
    tie = edit(
        run,
        run.jobs.index(b),
        submitted_s=queued - (b.queued_s - b.submitted_s),  # b's own lag, kept
        queued_s=queued,
        admitted_s=a.admitted_s - 0.9 * COMPRESSION,
    )
    assert "served_first_come_first_served" not in failed(tie), check_mmc(tie).render()


def test_a_job_whose_workload_was_not_seen_cannot_be_ordered() -> None:
    v = check_mmc(edit(simulate(), 7, queued_s=None))
    assert "served_first_come_first_served" in v.failed_clauses
    assert "expected every job's Workload seen appearing; observed 1 not: j007" in v.render()


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
    """a 1 wall s slack on admissions hid overtakings of up to 55 trace s; the
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
    """a Workload 'appearing' just before its admission emptied the order clause, so a
    last-come-first-served run held. It must appear after its Job, by its admission and within
    QUEUED_LAG_WALL_MAX of the Job."""
    run = _pair(100.0, 1000.0, 200.0, 970.0)
    run = dataclasses.replace(run, jobs=(dataclasses.replace(run.jobs[0], **change), run.jobs[1]))
    misses = served_first_come_first_served(run)
    assert [m.expected for m in misses] == [
        "every Workload appeared after its Job's submission, by its admission and within 300 trace s"
    ]
    assert misses[0].observed == f"1 not: {reason}"
