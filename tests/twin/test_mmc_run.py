"""The M/M/c case's input: parameters and readout rows outside the case are refused naming the input
(MmcInputError); what cannot be refused at input (an infinite time, a negative count) reaches the claim as
unobserved and is named there."""

from __future__ import annotations

import json
import math

import pytest

from tests.twin.mmc_worlds import COMPRESSION, C, job
from twin.mmc_claim import MmcInputError, MmcJob, MmcRun, check_mmc, from_readout


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
    """the same failing run passed when checked at 120x instead of its own 60x."""
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


def test_negative_counts_from_a_readout_are_not_evictions_summing_to_zero() -> None:
    run = from_readout({"run": RUN, "jobs": [_readout_row(0, preempted=-1, requeued=1)]}, 16, 60.0)
    assert run.jobs[0].evictions is None


@pytest.mark.parametrize("jobs", [None, [job("a", 1.0, 2.0, 3.0)], (job("a", 1.0, 2.0, 3.0), {"id": "b"})])
def test_jobs_that_are_not_a_tuple_of_jobs_are_refused_naming_them(jobs) -> None:
    with pytest.raises(MmcInputError, match="^jobs: expected a tuple of MmcJob, got "):
        MmcRun(C, COMPRESSION, jobs)
