"""The admission check: has Kueue admitted the workload? (moved from engine.py)"""

from __future__ import annotations

from gpu_finops.diagnose.kueue_visibility import position_text, reason_text
from gpu_finops.diagnose.model import ADMISSION, Finding, WorkloadFacts
from gpu_finops.diagnose.view import View
from gpu_finops.model.workload import ADMITTED, QUOTA_RESERVED

# The next action for KEP-10852's reasons where it differs from the quota one we derive ourselves.
ACTION_BY_REASON = {
    "ExceedsMaxQuota": "the workload asks more than its ClusterQueue can ever give, borrowing included: shrink it, "
    "or raise nominalQuota or borrowingLimit; waiting will not admit it",
    "NoMatchingFlavor": "no ResourceFlavor of its ClusterQueue matches the workload's nodeSelector, affinity or "
    "tolerations: fix those or the flavors; waiting will not admit it",
    "WaitingForPreemptedWorkloads": "Kueue has preempted workloads for it and waits for them to release their "
    "quota: it should be admitted shortly",
    "Misconfigured": "its LocalQueue or ClusterQueue is missing or invalid: fix the queue",
    "Suspended": "its LocalQueue or ClusterQueue is stopped (stopPolicy): resume the queue",
    # Kueue writes it on QuotaReserved and Evicted when spec.active is false (set by a user, or by Kueue
    # after the requeuing limit): Kueue does not queue it at all
    "Deactivated": "the workload is deactivated (spec.active false): Kueue does not queue it and waiting will "
    "not admit it; set spec.active to true once its cause is fixed",
}


def check_admission(v: View, workload: WorkloadFacts | None) -> Finding:
    pod = v.pod
    if workload is None:
        if pod.workload:
            return Finding(
                ADMISSION,
                False,
                f"the pod belongs to Kueue workload {pod.workload}, which was not found (deleted?); the pod "
                "is in the scheduler, so admission does not hold it",
                evidence={"workload": pod.workload, "found": False},
            )
        return Finding(
            ADMISSION,
            False,
            "not managed by Kueue (no Workload owns it): the pod is the scheduler's to place",
            evidence={"workload": None},
        )
    qr = workload.conditions.get(QUOTA_RESERVED)
    admitted = workload.conditions.get(ADMITTED)
    evidence = {
        "workload": workload.key,
        "queue": workload.queue,
        QUOTA_RESERVED: None
        if qr is None
        else {"status": qr.status, "reason": qr.reason, "message": qr.message},
        ADMITTED: None
        if admitted is None
        else {"status": admitted.status, "reason": admitted.reason, "message": admitted.message},
        "job_suspended": workload.job_suspended,
    }
    key = [f"workload:{workload.key}"]
    if workload.admitted and workload.job_suspended is not True:
        return Finding(
            ADMISSION,
            False,
            f"Kueue admitted workload {workload.key} (QuotaReserved True, Admitted True); its Job is running "
            "in the scheduler",
            evidence=evidence,
            key_evidence=(*key, "Admitted=True"),
        )
    if qr is not None and qr.status == "False":
        key.append("QuotaReserved=False")
        why = (
            f"QuotaReserved False ({qr.reason}): {qr.message}"
            if qr.message
            else f"QuotaReserved False ({qr.reason})"
        )
        action = (
            f"the ClusterQueue behind LocalQueue {workload.queue} has no free quota for it: wait for its running "
            "workloads, borrow within the cohort, raise nominalQuota, or give it a higher "
            "WorkloadPriorityClass to preempt; no node or GPU change will start it"
        )
        # With UnadmittedWorkloadsObservability off the reason does not say which: `Inadmissible` is every cause
        # but quota, and `Pending` over the maximum capacity is what ExceedsMaxQuota says with the gate on
        # (Kueue's flavor assigner writes "... > maximum capacity (n)" for a request no borrowing can meet)
        if qr.reason == "Inadmissible":
            action = (
                f"Kueue finds it inadmissible for a cause other than quota ({qr.message or 'no message'}): fix "
                "what that names (a missing LocalQueue or ClusterQueue, a stopped or inactive queue, a namespace "
                "its ClusterQueue does not select); waiting will not admit it"
            )
        elif qr.reason == "Pending" and "> maximum capacity" in qr.message:
            action = ACTION_BY_REASON["ExceedsMaxQuota"]
    elif qr is not None and qr.status == "True" and workload.admitted:
        key.append("QuotaReserved=True")
        why = "quota is reserved and the workload is Admitted"
        action = (
            "Kueue's job controller unsuspends an admitted Job: if it stays suspended, read the Job's events and "
            "Kueue's controller log (a webhook or a conflicting controller may refuse the update)"
        )
    elif qr is not None and qr.status == "True":
        key.append("QuotaReserved=True")
        why = "quota is reserved but the workload is not Admitted yet (admission checks pending)"
        action = "look at the workload's admissionChecks; the quota is there"
    else:
        key.append("QuotaReserved=unset")
        why = "Kueue has not tried it yet (no QuotaReserved condition): it is queued behind other workloads"
        action = f"it waits its turn in LocalQueue {workload.queue}; check the queue's pending workloads"
    if workload.admitted:  # here its Job is still suspended: an admitted, running one returned above
        key.append("suspended")
        why = f"its Job is still suspended, so no pod exists for the scheduler ({why})"
    elif workload.job_suspended:
        key.append("suspended")
        why += "; its Job is suspended, so no pod exists for the scheduler"
    # Kueue's own word first (its queue position, its reason), each said as a fallback when missing, then
    # what we derive ourselves from the conditions.
    position, position_keys = position_text(workload.kueue)
    reason, reason_keys = reason_text(workload)
    evidence["kueue"] = {
        "position": None
        if workload.kueue is None or workload.kueue.position is None
        else vars(workload.kueue.position),
        "position_said": position,
        "reason_said": reason,
    }
    quoted = next((k.split(":", 1)[1] for k in reason_keys if k.startswith("kueue-reason:")), None)
    action = ACTION_BY_REASON.get(quoted or "", action)
    # Admitted True without QuotaReserved True: Kueue never writes that, so one condition is stale
    contradict = workload.admitted and (qr is None or qr.status != "True")
    if contradict:
        action = (
            "read the Workload again: Admitted True without QuotaReserved True is no state Kueue writes; if it "
            "stays, Kueue's status writes are failing (its controller log)"
        )
    if contradict:
        said = (
            f"the conditions of workload {workload.key} contradict each other (Admitted True, QuotaReserved "
            f"{'unset' if qr is None else qr.status})"
        )
    elif workload.admitted:
        said = f"Kueue admitted workload {workload.key}, but it does not run"
    else:
        said = f"Kueue has not admitted workload {workload.key}"
    return Finding(
        ADMISSION,
        True,
        f"{position}; {reason}; {said}: {why}",
        action,
        evidence,
        (*key, *position_keys, *reason_keys),
    )
