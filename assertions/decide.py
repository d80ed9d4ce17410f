"""A list of failed conditions into a Verdict, for the nightly workflow's checker (assertions/nightly.py). The acts'
checkers compose named clauses instead (assertions/clauses.py)."""

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
