"""One way an observed history contradicts an object's lifecycle, as every invariant of the model says it:
a Workload's (`workload`) and a NodeClaim's (`nodeclaim`) alike."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Violation:
    """Which invariant broke, at which observation (or condition), and what it showed."""

    invariant: str
    at: datetime | None
    observed: str
