"""The one way checkers turn a list of failed conditions into a Verdict."""

from __future__ import annotations

from typing import Any

from assertions.verdict import Verdict


def decide(
    claim: str, expected: str, failures: list[str], observed_when_holding: str, **evidence: Any
) -> Verdict:
    """Holds only when nothing failed; otherwise `observed` lists every failure, in the order found."""
    if failures:
        return Verdict(claim, False, expected, "; ".join(failures), evidence)
    return Verdict(claim, True, expected, observed_when_holding, evidence)


def seconds(a: Any, b: Any) -> float | None:
    return (b - a).total_seconds() if a is not None and b is not None else None
