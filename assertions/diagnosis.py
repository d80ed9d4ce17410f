"""Act 7: the diagnosis names the cause. Each pending pod (or unadmitted workload) built with a known
cause is diagnosed with that cause first, with its key evidence, every later check shown, and, where two
causes hold at once, the later one shown holding too, so it was the order that decided."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assertions.decide import decide
from assertions.verdict import Verdict

CLAIM = (
    "every waiting GPU pod is diagnosed with the cause it was built with, first in the order "
    "admission, allocation, memory, placement, application, with that cause's evidence"
)
ORDER = ("admission", "allocation", "memory", "placement", "application")


@dataclass(frozen=True)
class Situation:
    """What the act built for one target."""

    target: str  # "namespace/name" of the pending pod or the workload
    expected_first: str
    key_evidence: tuple[str, ...]  # tokens the first finding must carry, e.g. "holder:team-a/llm"
    also_holds: tuple[str, ...] = ()  # later causes built to hold as well (two causes at once)


@dataclass(frozen=True)
class DiagnosisObs:
    """What the diagnosis said for one target."""

    target: str
    first_cause: str | None
    key_evidence: tuple[str, ...]  # of the first finding
    checks: tuple[str, ...]  # the checks shown, in the order shown
    also_explains: tuple[str, ...] = ()
    not_checked: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DiagnosisObs:
        """From the diagnosis's JSON (`gpu-finops diagnose --json`, one entry of "diagnoses")."""
        findings = list(d.get("findings") or ())
        first = next((f for f in findings if f.get("check") == d.get("first_cause")), None)
        return cls(
            target=d["target"],
            first_cause=d.get("first_cause"),
            key_evidence=tuple((first or {}).get("key_evidence") or ()),
            checks=tuple(f["check"] for f in findings),
            also_explains=tuple(d.get("also_explains") or ()),
            not_checked=tuple(d.get("not_checked") or ()),
        )


@dataclass(frozen=True)
class DiagnosisActObs:
    situations: tuple[Situation, ...]
    diagnoses: tuple[DiagnosisObs, ...]
    required_causes: tuple[str, ...] = ORDER  # each must be some situation's expected first cause


def check_diagnosis(o: DiagnosisActObs) -> Verdict:
    f: list[str] = []
    if not o.situations:
        f.append("no situation was built: nothing was diagnosed against a known cause")
    missing_causes = [c for c in o.required_causes if c not in {s.expected_first for s in o.situations}]
    if missing_causes:
        f.append(f"no situation built for {missing_causes}: every cause must be shown to be found")
    if o.situations and not any(s.also_holds for s in o.situations):
        f.append("no situation where two causes hold at once: the order was never put to the test")
    by_target = {d.target: d for d in o.diagnoses}
    named = []
    for s in o.situations:
        d = by_target.get(s.target)
        if d is None:
            f.append(f"{s.target}: not diagnosed (diagnosed: {sorted(by_target)})")
            continue
        if d.first_cause != s.expected_first:
            f.append(f"{s.target}: first cause {d.first_cause}, expected {s.expected_first}")
        else:
            lacking = [k for k in s.key_evidence if k not in d.key_evidence]
            if lacking:
                f.append(
                    f"{s.target}: {s.expected_first} named without its evidence {lacking} "
                    f"(the finding carries {list(d.key_evidence)})"
                )
        if d.checks != ORDER:
            f.append(
                f"{s.target}: checks shown {list(d.checks)}, expected every check in the order {list(ORDER)}"
            )
        if d.not_checked:
            f.append(f"{s.target}: not checked: {list(d.not_checked)}; the act needs every check made")
        unshown = [c for c in s.also_holds if c not in d.also_explains]
        if unshown:
            f.append(
                f"{s.target}: {unshown} also hold(s) but the diagnosis does not show it holding "
                f"(shown holding: {list(d.also_explains)}): later checks were skipped or wrong"
            )
        named.append(f"{s.target}: {d.first_cause}")
    return decide(
        CLAIM,
        "; ".join(
            f"{s.target}: {s.expected_first}" + (f" (also {', '.join(s.also_holds)})" if s.also_holds else "")
            for s in o.situations
        )
        or "one situation per cause, one with two causes at once",
        f,
        "; ".join(named),
        situations=[s.__dict__ for s in o.situations],
        diagnoses=[d.__dict__ for d in o.diagnoses],
    )
