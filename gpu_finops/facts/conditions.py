"""One Kubernetes status condition (`metav1.Condition`: type, status, reason, message, lastTransitionTime),
as every reader and claim checker of ours holds it: the acts' observers and checkers (`assertions/`) and the
diagnosis (`gpu_finops/diagnose/`) share this one type, so a condition read once means the same thing to both."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""
    last_transition: datetime | None = None  # None where the reader did not need it (the diagnosis)
    observed_generation: int | None = None  # the object's generation it was written for; None: not read
