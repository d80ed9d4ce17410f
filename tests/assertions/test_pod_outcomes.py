"""One reading of how a pod ended, shared by every act: a run that counts, a pod the platform ended before it
ever ran (its Job makes another), and a failure, with a run not yet started being none of them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from assertions.observed import Interval, PodObs

RUN = Interval(datetime(2026, 12, 1, 12, 0, 10, tzinfo=UTC))


def pod(phase: str, running: Interval | None = RUN, **kw) -> PodObs:
    return PodObs("p", "gpu-a", phase, running, **kw)


@pytest.mark.parametrize(
    "p, healthy, ended_before, failure",
    [
        pytest.param(pod("Running"), True, None, None, id="running"),
        pytest.param(pod("Succeeded", exit_code=0), True, None, None, id="succeeded"),
        pytest.param(pod("Pending", None), False, None, None, id="not-started-yet"),
        pytest.param(
            pod("Failed", None, disruption="DeletionByTaintManager", evicted=True),
            False, "disrupted: DeletionByTaintManager", None, id="ended-by-the-platform-before-it-ran",
        ),
        pytest.param(
            pod("Pending", None, evicted=True), False, "disrupted: evicted", None, id="evicted-while-pending",
        ),
        pytest.param(
            pod("Failed", None, exit_code=1, reason="Error", disruption="DeletionByTaintManager"),
            False, None, "Failed, exit 1, reason Error: disrupted: DeletionByTaintManager", id="crashed-then-disrupted",
        ),
        pytest.param(
            pod("Succeeded", None, exit_code=0, disruption="EvictionByEvictionAPI"),
            False, None, "Succeeded, exit 0, reason None: disrupted: EvictionByEvictionAPI", id="succeeded-but-disrupted",
        ),
        pytest.param(
            pod("Failed", None, exit_code=137, reason="OOMKilled"),
            False, None, "Failed, exit 137, reason OOMKilled: ended OOMKilled", id="oom-killed-no-run-recorded",
        ),
        pytest.param(
            pod("Failed", None, exit_code=1, reason="CrashLoopBackOff"),
            False, None, "Failed, exit 1, reason CrashLoopBackOff: no run recorded", id="crash-no-run-recorded",
        ),
        pytest.param(pod("Unknown"), False, None, "Unknown, exit None, reason None", id="run-in-phase-unknown"),
        pytest.param(pod("Pending"), False, None, "Pending, exit None, reason None", id="run-recorded-yet-pending"),
        pytest.param(
            pod("Running", None), False, None, "Running, exit None, reason None: no run recorded",
            id="running-with-no-start",
        ),
        pytest.param(
            pod("Running", disruption="PreemptionByScheduler"),
            False, None, "Running, exit None, reason None: disrupted: PreemptionByScheduler", id="disrupted-after-it-ran",
        ),
        pytest.param(pod("Succeeded", exit_code=2), False, None, "Succeeded, exit 2, reason None", id="non-zero-exit"),
        pytest.param(
            pod("Running", gone_at=RUN.start), False, None,
            "Running, exit None, reason None: deleted while Running (gone by 2026-12-01T12:00:10+00:00), its end never "
            "seen", id="deleted-while-running-end-never-seen",
        ),
        pytest.param(
            pod("Pending", None, gone_at=RUN.start), False,
            "deleted while Pending (gone by 2026-12-01T12:00:10+00:00), its end never seen", None,
            id="deleted-before-it-ran",
        ),
        pytest.param(pod("Succeeded", exit_code=0, gone_at=RUN.start), True, None, None, id="deleted-after-success"),
    ],
)  # fmt: skip
def test_each_ending_is_read_once_as_a_run_a_replacement_a_failure_or_not_yet(
    p, healthy, ended_before, failure
):
    assert (p.healthy_run is not None, p.ended_before_it_ran, p.failure) == (healthy, ended_before, failure)
