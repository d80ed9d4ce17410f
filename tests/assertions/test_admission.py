"""Act 2's checker: the holding case and each way admission could look right while it was not."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from assertions.admission import AdmissionObs, check_admission
from assertions.observed import Interval, PodObs, WorkloadSnapshot
from tests.assertions.tables import (
    admitted_snap,
    check,
    cond,
    pending_snap,
    pending_wl,
    running_wl,
    seen_until,
    t,
)

# --- act 2: quota admission ------------------------------------------------------------------------------
ADMIT = AdmissionObs(
    workloads=seen_until(
        (
            running_wl("a-0", "team-a"),
            running_wl("b-0", "team-b"),
            *(pending_wl(f"a-{i}", "team-a") for i in range(1, 6)),
            *(pending_wl(f"b-{i}", "team-b") for i in range(1, 6)),
        ),
        t(60),
    ),
    tenants=("team-a", "team-b"),
    observed_at=t(60),
    submitted={f"{tn}-{i}": f"team-{tn}" for tn in "ab" for i in range(6)},
)


def changed(i: int, **fields: Any) -> AdmissionObs:
    """The holding observation, but its i-th workload with `fields` changed."""
    w = ADMIT.workloads
    return replace(ADMIT, workloads=(*w[:i], replace(w[i], **fields), *w[i + 1 :]))


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
            changed(0, pods=()),
            "admitted workload a-0 never had a healthy Running pod",
        ),
        (
            "pending job reached the scheduler",
            changed(2, pods=(PodObs("a-1-pod", None, "Pending"),)),
            "reached the scheduler",
        ),
        ("only eleven observed", replace(ADMIT, workloads=ADMIT.workloads[:11]), "observed 11 workloads"),
        (
            "jobs finishing and handing quota on",
            changed(
                0,
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
            "Finished during the observation",
        ),
        (
            "a third admitted and evicted mid-window: the last snapshot alone shows two",
            changed(2, snapshots=(admitted_snap(3, "team-a"), pending_snap(8))),
            "3 admitted during the observation",
        ),
        (
            "one per namespace, but both charged to team-a's ClusterQueue",
            changed(1, snapshots=(admitted_snap(5, "team-a"),)),
            "admitted per ClusterQueue ['team-a', 'team-a'], expected one each of ['team-a', 'team-b']",
        ),
        (
            "an admitted pod that crashed is not running",
            changed(
                0,
                pods=(
                    PodObs(
                        "a-0-pod",
                        "gpu-a",
                        "Failed",
                        Interval(t(10), t(12)),
                        exit_code=1,
                        reason="Error",
                        devices=("GPU-a",),
                    ),
                ),
            ),
            "admitted workload a-0's pod crashed or was ended by the platform, not run: "
            "['a-0-pod (Failed, exit 1, reason Error: ended Error)']",
        ),
        (
            "both admitted pods on one card",
            replace(
                ADMIT,
                workloads=(
                    running_wl("a-0", "team-a", device="GPU-1111"),
                    running_wl("b-0", "team-b", device="GPU-1111"),
                    *ADMIT.workloads[2:],
                ),
            ),
            "ran on the same physical GPU ['GPU-1111']: one card, not two",
        ),
        (
            "which card is unknown",
            changed(0, pods=(replace(ADMIT.workloads[0].pods[0], devices=()),)),
            "no GPU device was observed for a-0's pod",
        ),
        (
            "a queued workload held quota for a while",
            changed(
                2,
                snapshots=(
                    WorkloadSnapshot(t(4), {"QuotaReserved": cond("QuotaReserved", "True")}, True, True),
                    pending_snap(8),
                ),
            ),
            "a-1 held quota at 2026-11-30T12:00:04+00:00",
        ),
        (
            "nothing observed (an event filter matching nothing)",
            replace(ADMIT, workloads=()),
            "observed 0 workloads",
        ),
        (
            "pending with an unknown quota state",
            changed(
                2,
                snapshots=(
                    WorkloadSnapshot(t(5), {"QuotaReserved": cond("QuotaReserved", "Unknown")}, False, True),
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
            *seen_until(
                (
                    replace(w, snapshots=(WorkloadSnapshot(t(5), {}, False, True, uid=f"uid-{w.name}"),))
                    for w in ADMIT.workloads[2:]
                ),
                t(60),
            ),
        ),
    )
    check(check_admission(queued), True)


def test_pods_running_before_their_workloads_were_admitted_fail():
    """Pods before admission: the admitted jobs' pods were Running before Kueue admitted their Workloads."""
    late = seen_until(
        (
            replace(w, snapshots=(admitted_snap(30, w.tenant, uid=f"uid-{w.name}"),))
            if w.snapshots[0].has_admission
            else w
            for w in ADMIT.workloads
        ),
        t(60),
    )
    v = check_admission(replace(ADMIT, workloads=late))
    check(
        v, False, "pod a-0-pod of a-0 was Running at 2026-11-30T12:00:10+00:00, before Kueue admitted a-0 at"
    )
    assert v.failed_clauses == ("pods_start_only_after_admission",)


def test_a_pod_the_platform_ended_before_it_ran_is_replaced_not_a_failure_and_named_in_the_evidence():
    """The taint-eviction controller ends a pod on a new node before it ran; the Job makes another, which runs:
    the Workload stays admitted, so the claim holds and the ended pod is named."""
    lost = PodObs("a-0-lost", "gpu-a", "Failed", None, disruption="DeletionByTaintManager", evicted=True)
    a0 = ADMIT.workloads[0]
    v = check_admission(changed(0, pods=(lost, *a0.pods)))
    check(v, True)
    assert v.evidence["replaced"] == {"a-0-lost": "disrupted: DeletionByTaintManager"}


def test_a_pod_the_platform_ended_after_it_ran_still_fails_though_its_job_ran_another():
    ended = PodObs(
        "a-0-ended",
        "gpu-a",
        "Running",
        Interval(t(8), t(9)),
        devices=("GPU-x",),
        disruption="DeletionByTaintManager",
    )
    v = check_admission(changed(0, pods=(ended, *ADMIT.workloads[0].pods)))
    check(
        v,
        False,
        "admitted workload a-0's pod crashed or was ended by the platform, not run: "
        "['a-0-ended (Running, exit None, reason None: disrupted: DeletionByTaintManager)']",
    )
    assert "admitted_pods_ran_healthy" in v.failed_clauses
