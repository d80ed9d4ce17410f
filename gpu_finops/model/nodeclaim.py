"""A Karpenter NodeClaim's lifecycle: its condition types, the one reader of when each became true, and the
order any observed history must keep.

Karpenter (`sigs.k8s.io/karpenter`, `pkg/apis/v1/nodeclaim_status.go`) sets Launched (the cloud provider
created the instance), Registered (a node joined and carries the claim's name), Initialized (the node is
ready with its resources advertised), Ready, and on the way out Drifted, Disrupted (`Disrupting`),
ConsistentStateFound, ... A condition counts only when its status is "True".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from gpu_finops.facts import timestamps
from gpu_finops.model.time_order import before
from gpu_finops.model.violation import Violation

LAUNCHED = "Launched"
REGISTERED = "Registered"
INITIALIZED = "Initialized"
READY = "Ready"
CONDITION_TYPES = (LAUNCHED, REGISTERED, INITIALIZED, READY)
# The order a NodeClaim moves through, after its own creation.
LIFECYCLE = (LAUNCHED, REGISTERED, INITIALIZED)


def became_true(raw_conditions: Iterable[Mapping[str, Any]] | None, ctype: str) -> str | None:
    """The lastTransitionTime (as the API wrote it) of the condition `ctype` when it is True; else None."""
    return next(
        (
            c.get("lastTransitionTime")
            for c in raw_conditions or ()
            if c.get("type") == ctype and c.get("status") == "True"
        ),
        None,
    )


def statuses(raw_conditions: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    """type -> status of each condition."""
    return {c["type"]: c["status"] for c in raw_conditions or ()}


def in_lifecycle_order(
    name: str, created: datetime | None, steps: Mapping[str, datetime | None]
) -> list[Violation]:
    """A NodeClaim exists before it Launches, Launches before its node Registers, and Registers before it is
    Initialized: a step in an earlier whole second than the one before it contradicts the object's own
    history (a look-alike claim, or timestamps from another object)."""
    out = []
    prior: tuple[str, datetime | None] = ("created", created)
    for step in LIFECYCLE:
        at = steps.get(step)
        if at is None:
            continue
        if prior[1] is not None and before(at, prior[1]):
            out.append(
                Violation(
                    "in_lifecycle_order",
                    at,
                    f"NodeClaim {name} {step} {timestamps.iso(at)} before it was {prior[0]} "
                    f"{timestamps.iso(prior[1])}",
                )
            )
        prior = (step, at)
    return out
