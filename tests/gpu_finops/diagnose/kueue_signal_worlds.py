"""Wrong worlds for Kueue's signals in diagnose: pending-list entries, a LocalQueue's answer, a
waiting Workload (tests/gpu_finops/diagnose/test_kueue_signals*.py)."""

from __future__ import annotations

import json
from typing import Any

from gpu_finops.diagnose.kueue_visibility import (
    local_queue_path,
    pending_path,
    read_signals,
)
from gpu_finops.diagnose.model import WorkloadFacts
from gpu_finops.facts.conditions import Condition

NS, LQ, CQ = "team-a", "main", "gpu-cq"
V2 = "v1beta2"


def entry(name: str, cq: int, lq: int, *, ns: str = NS, priority: Any = 0, **meta: Any) -> dict[str, Any]:
    """One item of a PendingWorkloadsSummary, shaped as Kueue v0.19.2 serves it (tests/gpu_finops/diagnose/recorded)."""
    return {
        "metadata": {"name": name, "namespace": ns, **meta},
        "priority": priority,
        "localQueueName": LQ,
        "positionInClusterQueue": cq,
        "positionInLocalQueue": lq,
    }


def summary(items: Any) -> str:
    return json.dumps(
        {"kind": "PendingWorkloadsSummary", "apiVersion": f"visibility.kueue.x-k8s.io/{V2}", "items": items}
    )


LQ_BODY = json.dumps(
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "spec": {"clusterQueue": CQ}}
)


def getter(pending: tuple[int, str], lq: tuple[int, str] = (200, LQ_BODY)):
    answers = {pending_path(V2, NS, LQ): pending, local_queue_path(NS, LQ): lq}
    return lambda path: answers.get(path, (404, "404 page not found\n"))


def waiting(name: str = "job-train-abcde", **kw: Any) -> WorkloadFacts:
    conditions = kw.pop(
        "conditions",
        {
            "QuotaReserved": Condition(
                "QuotaReserved", "False", "WaitingForQuota", "insufficient unused quota for nvidia.com/gpu"
            )
        },
    )
    return WorkloadFacts(NS, name, queue=LQ, conditions=conditions, job_suspended=True, **kw)


def signal(items: Any, w: WorkloadFacts | None = None):
    w = w or waiting()
    return read_signals(getter((200, summary(items))), [w])[w.key]
