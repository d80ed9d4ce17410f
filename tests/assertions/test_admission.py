"""Act 2, quota admission: the case where the claim holds and each way it could look true while false.

Every adjacent case must give holds=False with a message that says why (the `why` column)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assertions.admission import AdmissionObs, check_admission
from assertions.observed import Interval, PodObs, WorkloadObs, WorkloadSnapshot
from tests.assertions.observations import admitted_snap, check, cond, pending_snap, t


def running_wl(name: str, tenant: str, start: float = 10, end: float | None = None) -> WorkloadObs:
    return WorkloadObs(
        name,
        tenant,
        snapshots=(admitted_snap(5),),
        pods=(PodObs(f"{name}-pod", "gpu-a", "Running", Interval(t(start), t(end) if end else None)),),
    )


def pending_wl(name: str, tenant: str) -> WorkloadObs:
    return WorkloadObs(name, tenant, snapshots=(pending_snap(5),))


ADMIT = AdmissionObs(
    workloads=(
        running_wl("a-0", "team-a"),
        running_wl("b-0", "team-b"),
        *(pending_wl(f"a-{i}", "team-a") for i in range(1, 6)),
        *(pending_wl(f"b-{i}", "team-b") for i in range(1, 6)),
    ),
    tenants=("team-a", "team-b"),
    observed_at=t(60),
)


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "three admitted",
            replace(
                ADMIT, workloads=(*ADMIT.workloads[:2], running_wl("a-1", "team-a"), *ADMIT.workloads[3:])
            ),
            "3 admitted",
        ),
        (
            "both admitted from one tenant",
            replace(
                ADMIT,
                workloads=(
                    running_wl("a-0", "team-a"),
                    running_wl("a-1", "team-a"),
                    pending_wl("b-0", "team-b"),
                    *ADMIT.workloads[3:],
                ),
            ),
            "one each of",
        ),
        (
            "admitted but never running at once",
            replace(
                ADMIT,
                workloads=(
                    running_wl("a-0", "team-a", 10, 20),
                    running_wl("b-0", "team-b", 30, 40),
                    *ADMIT.workloads[2:],
                ),
            ),
            "never Running at the same time",
        ),
        (
            "admitted but never running",
            replace(ADMIT, workloads=(replace(ADMIT.workloads[0], pods=()), *ADMIT.workloads[1:])),
            "never had a Running pod",
        ),
        (
            "pending job reached the scheduler",
            replace(
                ADMIT,
                workloads=(
                    *ADMIT.workloads[:2],
                    replace(ADMIT.workloads[2], pods=(PodObs("a-1-pod", None, "Pending"),)),
                    *ADMIT.workloads[3:],
                ),
            ),
            "reached the scheduler",
        ),
        ("only eleven observed", replace(ADMIT, workloads=ADMIT.workloads[:11]), "observed 11 workloads"),
        (
            "jobs finishing and handing quota on",
            replace(
                ADMIT,
                workloads=(
                    replace(
                        ADMIT.workloads[0],
                        snapshots=(
                            WorkloadSnapshot(
                                t(50),
                                {
                                    "QuotaReserved": cond("QuotaReserved", "True"),
                                    "Admitted": cond("Admitted", "True"),
                                    "Finished": cond("Finished", "True", "Succeeded"),
                                },
                                True,
                                False,
                            ),
                        ),
                    ),
                    *ADMIT.workloads[1:],
                ),
            ),
            "Finished during the observation",
        ),
        (
            "nothing observed (an event filter matching nothing)",
            replace(ADMIT, workloads=()),
            "observed 0 workloads",
        ),
        (
            "pending with an unknown quota state",
            replace(
                ADMIT,
                workloads=(
                    *ADMIT.workloads[:2],
                    replace(
                        ADMIT.workloads[2],
                        snapshots=(
                            WorkloadSnapshot(
                                t(5), {"QuotaReserved": cond("QuotaReserved", "Unknown")}, False, True
                            ),
                        ),
                    ),
                    *ADMIT.workloads[3:],
                ),
            ),
            "QuotaReserved is Unknown",
        ),
    ],
)
def test_admission_adjacent_cases_fail(case, obs, why):
    check(check_admission(obs), False, why)


def test_admission_holds():
    check(check_admission(ADMIT), True)


def test_admission_holds_while_queued_workloads_have_no_quota_condition_yet():
    # Kueue marks QuotaReserved=False only on the workload it tried; the rest wait without the condition.
    queued = replace(
        ADMIT,
        workloads=(
            *ADMIT.workloads[:2],
            *(replace(w, snapshots=(WorkloadSnapshot(t(5), {}, False, True),)) for w in ADMIT.workloads[2:]),
        ),
    )
    check(check_admission(queued), True)
