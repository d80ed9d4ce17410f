"""The one result type every claim checker returns, and the pytest helper that fails on it.

A `Verdict` carries everything a reader needs to judge the claim without rerunning it: the claim in
plain words, whether it holds, what was expected, what was observed, and the evidence (object names,
timestamps, conditions) the decision was made from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ClauseFailure:
    """One clause of a claim that the observed world broke: which clause, what it needed, what was seen."""

    clause: str  # the clause function's name, e.g. "replacement_is_a_new_spot_node_of_ours"
    expected: str
    observed: str


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one claim against observed state."""

    claim: str
    holds: bool
    expected: str
    observed: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    failures: tuple[ClauseFailure, ...] = ()  # each clause that failed, in the claim's order

    @property
    def failed_clauses(self) -> tuple[str, ...]:
        """The names of the clauses that failed, each once, in the claim's order."""
        return tuple(dict.fromkeys(f.clause for f in self.failures))

    def __bool__(self) -> bool:  # a Verdict must never be used as a truth value by accident
        raise TypeError("use verdict.holds, not the Verdict itself, as a boolean")

    def render(self) -> str:
        """A readable, multi-line description used in failures and reports."""
        status = "HOLDS" if self.holds else "DOES NOT HOLD"
        lines = [
            f"claim:    {self.claim}",
            f"verdict:  {status}",
            f"expected: {self.expected}",
            f"observed: {self.observed}",
        ]
        if self.failures:
            lines.append("failed clauses:")
            for f in self.failures:
                lines.append(f"  {f.clause}: expected {f.expected}; observed {f.observed}")
        if self.evidence:
            lines.append("evidence:")
            for key, value in self.evidence.items():
                text = json.dumps(value, default=str, indent=2, sort_keys=True)
                text = text.replace("\n", "\n    ")
                lines.append(f"  {key}: {text}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for reports."""
        return {
            "claim": self.claim,
            "holds": self.holds,
            "expected": self.expected,
            "observed": self.observed,
            "evidence": json.loads(json.dumps(dict(self.evidence), default=str)),
            "failed_clauses": [
                {"clause": f.clause, "expected": f.expected, "observed": f.observed} for f in self.failures
            ],
        }


def holds(claim: str, expected: str, observed: str, **evidence: Any) -> Verdict:
    """Shorthand for a verdict whose claim holds."""
    return Verdict(claim=claim, holds=True, expected=expected, observed=observed, evidence=evidence)


def fails(claim: str, expected: str, observed: str, **evidence: Any) -> Verdict:
    """Shorthand for a verdict whose claim does not hold; `observed` must say why."""
    return Verdict(claim=claim, holds=False, expected=expected, observed=observed, evidence=evidence)


class ClaimFailed(AssertionError):
    """Raised by `require` when a claim does not hold; its message is the full verdict."""

    def __init__(self, verdict: Verdict):
        super().__init__("\n" + verdict.render())
        self.verdict = verdict


def require(verdict: Verdict) -> Verdict:
    """Fail the current test with the whole verdict printed, unless the claim holds."""
    if not isinstance(verdict, Verdict):
        raise TypeError(f"require() takes a Verdict, got {type(verdict).__name__}")
    if not verdict.holds:
        raise ClaimFailed(verdict)
    return verdict
