"""Act 7 (diagnosis): holding worlds and their near-misses."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from assertions.diagnosis import ORDER, DiagnosisActObs, DiagnosisObs, Situation
from tests.assertions.near_misses import Break

EVIDENCE = {
    "admission": ("workload:team-b/second", "QuotaReserved=False"),
    "allocation": ("holder:team-a/server-0",),
    "memory": ("vram-full:gpu-ts/GPU-1",),
    "placement": ("ruled-out:gpu-b:taint", "only-match:gpu-a"),
    "application": ("starved:team-a/trainer",),
}

# as the act builds them: the queued Job in the second tenant's namespace, every other pod in the first's
NAMESPACE = {c: "team-b" if c == "admission" else "team-a" for c in ORDER}


@st.composite
def holding(draw: st.DrawFn) -> DiagnosisActObs:
    """One situation per cause, in any order, and one or more with a later cause holding too."""
    situations = [Situation(f"{NAMESPACE[c]}/waits-{c}", c, EVIDENCE[c]) for c in ORDER]
    for i in range(draw(st.integers(1, 2))):
        first = draw(st.sampled_from(ORDER[:-1]))
        also = draw(st.sampled_from(ORDER[ORDER.index(first) + 1 :]))
        situations.append(
            Situation(f"{NAMESPACE[first]}/two-{i}", first, EVIDENCE[first], also_holds=(also,))
        )
    situations = draw(st.permutations(situations))
    diagnoses = [
        DiagnosisObs(s.target, s.expected_first, (*s.key_evidence, *draw(st.lists(st.sampled_from(["x:1", "y:2"]), max_size=2))),
                     ORDER, s.also_holds, explaining=(s.expected_first, *s.also_holds), kind=s.kind, order=ORDER)
        for s in situations
    ]  # fmt: skip
    return DiagnosisActObs(tuple(situations), tuple(draw(st.permutations(diagnoses))))


def two_cause(o: DiagnosisActObs) -> Situation:
    return next(s for s in o.situations if s.also_holds)


def diagnosis(o: DiagnosisActObs, target: str, **changes) -> DiagnosisActObs:
    return replace(
        o, diagnoses=tuple(replace(d, **changes) if d.target == target else d for d in o.diagnoses)
    )


def the_order_decided_otherwise(o: DiagnosisActObs) -> DiagnosisActObs:
    """The live mutation: the later cause named first, the findings agreeing with that answer."""
    s = two_cause(o)
    return diagnosis(o, s.target, first_cause=s.also_holds[0], also_explains=(), explaining=s.also_holds,
                     key_evidence=EVIDENCE[s.also_holds[0]])  # fmt: skip


BREAKS = (
    Break("a_situation_for_every_cause_and_one_with_two", "count", "no situation built",
          lambda o: replace(o, situations=(), diagnoses=())),
    Break("a_situation_for_every_cause_and_one_with_two", "count", "a cause with no situation",
          lambda o: replace(o, situations=tuple(s for s in o.situations if s.expected_first != "memory"))),
    Break("a_situation_for_every_cause_and_one_with_two", "count", "no two-cause situation",
          lambda o: replace(o, situations=tuple(s for s in o.situations if not s.also_holds),
                            diagnoses=tuple(d for d in o.diagnoses if not d.also_explains))),
    Break("a_situation_for_every_cause_and_one_with_two", "identity", "a target built twice",
          lambda o: replace(o, situations=(*o.situations, o.situations[0]))),
    Break("each_target_diagnosed_once", "count", "a target not diagnosed",
          lambda o: replace(o, diagnoses=o.diagnoses[1:])),
    Break("each_target_diagnosed_once", "count", "a target diagnosed twice",
          lambda o: replace(o, diagnoses=(*o.diagnoses, o.diagnoses[0]))),
    Break("checks_come_in_the_diagnosis_order", "time", "placement checked before allocation",
          lambda o: diagnosis(o, o.diagnoses[0].target, checks=("admission", "placement", "allocation", "memory", "application"))),
    Break("checks_come_in_the_diagnosis_order", "count", "a check shown twice",
          lambda o: diagnosis(o, o.diagnoses[0].target, checks=(*ORDER, "memory"))),
    Break("every_check_made", "count", "a check not made",
          lambda o: diagnosis(o, o.diagnoses[0].target, not_checked=("application",))),
    Break("first_cause_agrees_with_the_findings", "provenance", "which findings explain not observed",
          lambda o: diagnosis(o, o.diagnoses[0].target, explaining=None)),
    Break("first_cause_agrees_with_the_findings", "state", "first_cause names a finding that does not explain",
          lambda o: diagnosis(o, two_cause(o).target, explaining=two_cause(o).also_holds)),
    Break("first_cause_agrees_with_the_findings", "time", "also_explains out of the findings' order",
          lambda o: diagnosis(o, two_cause(o).target, explaining=(two_cause(o).expected_first,))),
    Break("first_cause_is_the_built_one", "state", "the order decided otherwise (the live mutation)",
          the_order_decided_otherwise),
    Break("first_finding_carries_its_evidence", "identity", "the right cause, another holder as evidence",
          lambda o: diagnosis(o, o.situations[0].target, key_evidence=("holder:team-z/other",))),
    Break("first_finding_carries_its_evidence", "ownership", "the built evidence and a holder of another namespace",
          lambda o: diagnosis(o, o.situations[0].target,
                              key_evidence=(*o.situations[0].key_evidence, "holder:team-z/other"))),
    Break("first_finding_carries_its_evidence", "provenance", "a situation that names no evidence",
          lambda o: replace(o, situations=(replace(o.situations[0], key_evidence=()), *o.situations[1:]))),
    Break("the_other_built_cause_shown_holding", "state", "the later cause not shown holding",
          lambda o: diagnosis(o, two_cause(o).target, also_explains=(), explaining=(two_cause(o).expected_first,))),
)  # fmt: skip
