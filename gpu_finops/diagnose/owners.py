"""Which Kueue Workload a pod belongs to, told by ownerReferences: a Workload owned by the pod's Job (by UID
where both name one: a Job deleted and created again under its name leaves the old Job's Workload beside
the new one's), or by the pod itself (Kueue's plain-Pod integration)."""

from __future__ import annotations

from typing import Any


def owner(obj: dict[str, Any], kind: str) -> str | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return next((r["name"] for r in refs if r.get("kind") == kind), None)


def owner_uid(obj: dict[str, Any], kind: str) -> str | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return next((r.get("uid") for r in refs if r.get("kind") == kind), None) or None


def same_owner(pod: dict[str, Any], wl: dict[str, Any], kind: str = "Job") -> bool:
    """The pod and the Workload belong to the same Job: by UID where both name one (a Job deleted and created
    again under its name leaves the old Job's Workload beside the new one's), else by name."""
    name = owner(pod, kind)
    if not name or owner(wl, kind) != name:
        return False
    a, b = owner_uid(pod, kind), owner_uid(wl, kind)
    return a is None or b is None or a == b


Owners = dict[tuple[str | None, str, str], list[dict[str, Any]]]


def by_owner(workloads: list[dict[str, Any]]) -> Owners:
    """(namespace, owner kind, owner name) -> the Workloads so owned: by a Job (more than one after a Job was
    re-created), or by Pods (Kueue's plain-Pod integration: a single pod, or each pod of a pod group)."""
    out: Owners = {}
    for w in workloads:
        meta = w.get("metadata") or {}
        for ref in meta.get("ownerReferences") or ():
            if ref.get("kind") in ("Job", "Pod") and ref.get("name"):
                out.setdefault((meta.get("namespace"), ref["kind"], ref["name"]), []).append(w)
    return out


def workload_of(pod: dict[str, Any], by_owner: Owners) -> str | None:
    """The name of the pod's Workload: one owned by the pod itself (same name and UID), else one owned by the
    pod's Job (same_owner)."""
    meta = pod.get("metadata") or {}
    ns, uid = meta.get("namespace"), meta.get("uid") or None
    for w in by_owner.get((ns, "Pod", meta.get("name") or ""), ()):
        ref_uid = next(
            (
                r.get("uid")
                for r in (w.get("metadata") or {}).get("ownerReferences") or ()
                if r.get("kind") == "Pod" and r.get("name") == meta.get("name")
            ),
            None,
        )
        if uid is None or ref_uid is None or ref_uid == uid:
            return (w.get("metadata") or {}).get("name")
    job = owner(pod, "Job")
    if not job:
        return None
    candidates = by_owner.get((ns, "Job", job), ())
    return next(((w.get("metadata") or {}).get("name") for w in candidates if same_owner(pod, w)), None)
