"""Act 7: the diagnosis names the cause. Each pending pod (or unadmitted workload) built with a known
cause is diagnosed with that cause first, with its key evidence, every later check shown, and, where two
causes hold at once, the later one shown holding too, so it was the order that decided.

| clause | identity | ownership | time order | count | provenance | target |
|---|---|---|---|---|---|---|
| a_situation_for_every_cause_and_one_with_two | situation targets namespace/name, no target built twice | - | - | every cause of the order >= 1 (whatever required_causes says); >= 1 with two causes | what the act built | same |
| each_target_diagnosed_once | target "namespace/name" | - | - | exactly one diagnosis per built target | the diagnosis's JSON | same |
| checks_come_in_the_diagnosis_order | per diagnosis | - | the checks in the order admission, allocation, memory, placement, application | each check once | findings as shown | same |
| every_check_made | per diagnosis | - | - | nothing in not_checked | the diagnosis | same |
| first_cause_agrees_with_the_findings | per diagnosis | - | first_cause = the first explaining finding; also_explains = the later ones, in order | - | findings' `explains`, not the summary field | same |
| first_cause_is_the_built_one | per target | - | - | - | the diagnosis vs what the act built | same |
| first_finding_carries_its_evidence | per target | holder, node, workload tokens name the act's objects; every token of the finding naming a namespaced object (holder, starved, workload, dra-claim) names one in the act's namespaces | - | the act's tokens non-empty, none naming nothing (empty, 'kind:' alone, or a value with an empty part), all present | the first finding's key_evidence | same |
| the_other_built_cause_shown_holding | per target | - | after the first cause in the order | every also-built cause | also_explains | same |

Time order among the targets and the observation's timestamps are not checked: the diagnosis is one
read of the cluster (its DCGM window is the act's WINDOW_S), not a sequence of events.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assertions.clauses import Miss, compose
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

    @property
    def kind(self) -> str:
        """What the target is: a Workload waits on admission (its Job suspended, so no pod exists yet); every
        other cause is a pending pod's."""
        return "workload" if self.expected_first == "admission" else "pod"


@dataclass(frozen=True)
class DiagnosisObs:
    """What the diagnosis said for one target."""

    target: str
    first_cause: str | None
    key_evidence: tuple[str, ...]  # of the first finding
    checks: tuple[str, ...]  # the checks shown, in the order shown
    also_explains: tuple[str, ...] = ()
    not_checked: tuple[str, ...] = ()
    explaining: tuple[str, ...] | None = None  # the checks whose finding explains the wait, as shown
    kind: str | None = None  # "pod" or "workload", as the diagnosis names its target; None: not read
    order: tuple[str, ...] | None = None  # the order the diagnosis said it checked in; None: not read

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
            explaining=tuple(f["check"] for f in findings if f.get("explains")),
            kind=d.get("kind"),
            order=tuple(d["order"]) if d.get("order") is not None else None,
        )


@dataclass(frozen=True)
class DiagnosisActObs:
    situations: tuple[Situation, ...]
    diagnoses: tuple[DiagnosisObs, ...]
    required_causes: tuple[str, ...] = ORDER  # each must be some situation's expected first cause


def diagnosed(o: DiagnosisActObs) -> list[tuple[Situation, DiagnosisObs]]:
    """Each built situation with its diagnosis, for the targets diagnosed exactly once."""
    count = Counter(d.target for d in o.diagnoses)
    by_target = {d.target: d for d in o.diagnoses if count[d.target] == 1}
    return [(s, by_target[s.target]) for s in o.situations if s.target in by_target]


def is_namespaced(target: str) -> bool:
    namespace, _, name = target.partition("/")
    return bool(namespace) and bool(name) and "/" not in name


def names_nothing(token: str) -> bool:
    """An evidence token that cannot name one of the act's objects: empty, a kind with no value, or a value
    with an empty part (`holder:team-a/` names a namespace, no pod; `offers:node:` no resource): the engine
    writes every part of a `<namespace>/<name>`, `<node>/<uuid>` or `<node>:<resource>` value."""
    _, sep, value = token.partition(":")
    parts = value.replace("/", ":").split(":")
    return not token.strip() or (bool(sep) and any(not p.strip() for p in parts))


def a_situation_for_every_cause_and_one_with_two(o: DiagnosisActObs) -> list[Miss]:
    want = f"one situation per cause {list(o.required_causes)}, one with two causes, each target once"
    if not o.situations:
        return [Miss(want, "no situation was built: nothing was diagnosed against a known cause")]
    misses = []
    built = {s.expected_first for s in o.situations}
    missing = [c for c in dict.fromkeys((*ORDER, *o.required_causes)) if c not in built]
    if missing:
        misses.append(Miss(want, f"no situation built for {missing}: every cause must be shown to be found"))
    if not any(s.also_holds for s in o.situations):
        misses.append(
            Miss(want, "no situation where two causes hold at once: the order was never put to the test")
        )
    unnamed = [s.target for s in o.situations if not is_namespaced(s.target)]
    if unnamed:
        misses.append(
            Miss(want, f"targets not namespace/name: {unnamed}: which object was diagnosed is unproven")
        )
    twice = sorted(t for t, n in Counter(s.target for s in o.situations).items() if n > 1)
    if twice:
        misses.append(Miss(want, f"targets built twice: {twice}"))
    return misses


def each_target_diagnosed_once(o: DiagnosisActObs) -> list[Miss]:
    count = Counter(d.target for d in o.diagnoses)
    misses = []
    for s in o.situations:
        if count[s.target] == 0:
            misses.append(
                Miss(f"{s.target} diagnosed", f"{s.target}: not diagnosed (diagnosed: {sorted(count)})")
            )
        elif count[s.target] > 1:
            misses.append(
                Miss(f"{s.target} diagnosed once", f"{s.target}: diagnosed {count[s.target]} times")
            )
    misses += [
        Miss(
            f"{s.target} diagnosed as the {s.kind} the act built",
            f"{s.target}: diagnosed as a {d.kind or 'target of no kind read'}, the act built a {s.kind}: "
            "a namesake, not the object built",
        )
        for s, d in diagnosed(o)
        if d.kind != s.kind
    ]
    return misses


def checks_come_in_the_diagnosis_order(o: DiagnosisActObs) -> list[Miss]:
    want = f"every check in the order {list(ORDER)}, the order the diagnosis says it used"
    return [
        Miss(
            want,
            f"{s.target}: checks shown {list(d.checks)} in the order said {list(d.order) if d.order else 'none'}, "
            f"expected every check in the order {list(ORDER)}",
        )
        for s, d in diagnosed(o)
        if d.checks != ORDER or d.order != ORDER
    ]


def every_check_made(o: DiagnosisActObs) -> list[Miss]:
    return [
        Miss(
            "no check skipped",
            f"{s.target}: not checked: {list(d.not_checked)}; the act needs every check made",
        )
        for s, d in diagnosed(o)
        if d.not_checked
    ]


def first_cause_agrees_with_the_findings(o: DiagnosisActObs) -> list[Miss]:
    misses = []
    for s, d in diagnosed(o):
        want = "first_cause = the first explaining finding, also_explains = the later ones"
        if d.explaining is None:
            misses.append(Miss(want, f"{s.target}: which findings explain the wait was not observed"))
            continue
        first = d.explaining[0] if d.explaining else None
        if d.first_cause != first or d.also_explains != d.explaining[1:]:
            misses.append(
                Miss(
                    want,
                    f"{s.target}: first cause {d.first_cause}, also {list(d.also_explains)}, but the "
                    f"findings that explain are {list(d.explaining)}",
                )
            )
    return misses


def first_cause_is_the_built_one(o: DiagnosisActObs) -> list[Miss]:
    return [
        Miss(
            f"{s.target}: {s.expected_first}",
            f"{s.target}: first cause {d.first_cause}, expected {s.expected_first}",
        )
        for s, d in diagnosed(o)
        if d.first_cause != s.expected_first
    ]


def first_finding_carries_its_evidence(o: DiagnosisActObs) -> list[Miss]:
    misses = []
    ours = {s.target.partition("/")[0] for s in o.situations if is_namespaced(s.target)}
    for s, d in diagnosed(o):
        want = f"{s.target}: the {s.expected_first} finding carrying {list(s.key_evidence)}"
        if not s.key_evidence or any(names_nothing(k) for k in s.key_evidence):
            misses.append(
                Miss(
                    want,
                    f"{s.target}: the situation's evidence {list(s.key_evidence)} names nothing (no token, "
                    "or an empty one): nothing to check",
                )
            )
        elif d.first_cause == s.expected_first:
            lacking = [k for k in s.key_evidence if k not in d.key_evidence]
            if lacking:
                misses.append(
                    Miss(
                        want,
                        f"{s.target}: {s.expected_first} named without its evidence {lacking} "
                        f"(the finding carries {list(d.key_evidence)})",
                    )
                )
            strangers = [k for k in d.key_evidence if (ns := _namespace_named(k)) and ns not in ours]
            if strangers:
                misses.append(
                    Miss(
                        want,
                        f"{s.target}: the finding's evidence {strangers} names objects outside the act's namespaces "
                        f"{sorted(ours)}: it rests on something the act did not build",
                    )
                )
    return misses


# evidence kinds whose value is `<namespace>/<name>` of a namespaced object (gpu_finops.diagnose's findings)
NAMESPACED_KINDS = ("holder", "starved", "workload", "dra-claim")


def _namespace_named(token: str) -> str | None:
    """The namespace an evidence token names, for a kind that names a namespaced object; else None."""
    kind, _, value = token.partition(":")
    return value.partition("/")[0] if kind in NAMESPACED_KINDS and "/" in value else None


def the_other_built_cause_shown_holding(o: DiagnosisActObs) -> list[Miss]:
    misses = []
    for s, d in diagnosed(o):
        unshown = [c for c in s.also_holds if c not in d.also_explains]
        if unshown:
            misses.append(
                Miss(
                    f"{s.target}: {list(s.also_holds)} shown holding too",
                    f"{s.target}: {unshown} also hold(s) but the diagnosis does not show it holding (shown "
                    f"holding: {list(d.also_explains)}): later checks were skipped or wrong",
                )
            )
    return misses


CLAUSES = (
    a_situation_for_every_cause_and_one_with_two,
    each_target_diagnosed_once,
    checks_come_in_the_diagnosis_order,
    every_check_made,
    first_cause_agrees_with_the_findings,
    first_cause_is_the_built_one,
    first_finding_carries_its_evidence,
    the_other_built_cause_shown_holding,
)


def check_diagnosis(o: DiagnosisActObs) -> Verdict:
    """Act 7's claim: every clause of `CLAUSES` over the situations built and the diagnoses made."""
    return compose(
        CLAIM,
        "; ".join(
            f"{s.target}: {s.expected_first}" + (f" (also {', '.join(s.also_holds)})" if s.also_holds else "")
            for s in o.situations
        )
        or "one situation per cause, one with two causes at once",
        CLAUSES,
        o,
        lambda: "; ".join(f"{s.target}: {d.first_cause}" for s, d in diagnosed(o)),
        situations=[s.__dict__ for s in o.situations],
        diagnoses=[d.__dict__ for d in o.diagnoses],
    )
