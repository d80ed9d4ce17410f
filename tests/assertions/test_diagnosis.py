"""Act 7's checker: the holding row, and each way a diagnosis could look right while being wrong."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assertions.diagnosis import ORDER, DiagnosisActObs, DiagnosisObs, Situation, check_diagnosis

SITUATIONS = (
    Situation("team-a/alloc", "allocation", ("holder:team-a/llm-a", "holder:team-a/llm-b")),
    Situation("team-a/mem", "memory", ("vram-full:gpu-ts/GPU-1",)),
    Situation("team-a/place", "placement", ("ruled-out:gpu-t:taint", "only-match:gpu-busy")),
    Situation("team-a/app", "application", ("starved:team-a/starved",)),
    Situation("team-b/job-q", "admission", ("workload:team-b/job-q", "QuotaReserved=False")),
    Situation("team-b/job-both", "admission", ("QuotaReserved=False",), also_holds=("placement",)),
)


def right(s: Situation) -> DiagnosisObs:
    return DiagnosisObs(
        s.target,
        s.expected_first,
        (*s.key_evidence, "extra:token"),
        ORDER,
        s.also_holds,
        explaining=(s.expected_first, *s.also_holds),
        kind=s.kind,
        order=ORDER,
    )


DIAGNOSES = tuple(right(s) for s in SITUATIONS)
GOOD = DiagnosisActObs(SITUATIONS, DIAGNOSES)


def with_diagnosis(target: str, **changes) -> DiagnosisActObs:
    return replace(
        GOOD, diagnoses=tuple(replace(d, **changes) if d.target == target else d for d in DIAGNOSES)
    )


def test_holds_when_every_cause_and_its_evidence_are_right():
    v = check_diagnosis(GOOD)
    assert v.holds, v.render()
    assert v.observed.startswith("team-a/alloc: allocation; team-a/mem: memory")


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "placement checked first (the live mutation): the two-cause case names placement",
            with_diagnosis("team-b/job-both", first_cause="placement", also_explains=()),
            "team-b/job-both: first cause placement, expected admission",
        ),
        (
            "right cause, wrong holder as evidence",
            with_diagnosis("team-a/alloc", key_evidence=("holder:team-a/llm-a", "holder:team-a/other")),
            "team-a/alloc: allocation named without its evidence ['holder:team-a/llm-b'] "
            "(the finding carries ['holder:team-a/llm-a', 'holder:team-a/other'])",
        ),
        (
            "memory blamed where the starved holder is the cause",
            with_diagnosis("team-a/app", first_cause="memory"),
            "team-a/app: first cause memory, expected application",
        ),
        (
            "adjacent: allocation for the memory situation",
            with_diagnosis("team-a/mem", first_cause="allocation"),
            "team-a/mem: first cause allocation, expected memory",
        ),
        (
            "no cause found",
            with_diagnosis("team-a/place", first_cause=None),
            "team-a/place: first cause None, expected placement",
        ),
        (
            "a pod left undiagnosed",
            replace(GOOD, diagnoses=tuple(d for d in DIAGNOSES if d.target != "team-a/mem")),
            "team-a/mem: not diagnosed",
        ),
        (
            "stopped at the first cause without showing later checks",
            with_diagnosis("team-a/alloc", checks=("admission", "allocation")),
            "team-a/alloc: checks shown ['admission', 'allocation'] in the order said ['admission', 'allocation', "
            "'memory', 'placement', 'application'], expected every check in the order",
        ),
        (
            "walked in another order",
            with_diagnosis(
                "team-a/alloc", checks=("admission", "placement", "allocation", "memory", "application")
            ),
            "team-a/alloc: checks shown ['admission', 'placement', 'allocation', 'memory', 'application']",
        ),
        (
            "the second cause not shown holding",
            with_diagnosis("team-b/job-both", also_explains=()),
            "team-b/job-both: ['placement'] also hold(s) but the diagnosis does not show it holding",
        ),
        (
            "Prometheus was down during the act",
            with_diagnosis("team-a/place", not_checked=("memory", "application")),
            "team-a/place: not checked: ['memory', 'application']; the act needs every check made",
        ),
        (
            "no two-causes situation built",
            DiagnosisActObs(SITUATIONS[:5], DIAGNOSES[:5]),
            "no situation where two causes hold at once: the order was never put to the test",
        ),
        (
            "a cause never built",
            DiagnosisActObs(
                tuple(s for s in SITUATIONS if s.expected_first != "memory"),
                tuple(d for d in DIAGNOSES if d.first_cause != "memory"),
            ),
            "no situation built for ['memory']: every cause must be shown to be found",
        ),
        ("nothing built", DiagnosisActObs((), ()), "no situation was built"),
    ],
)
def test_adjacent_rows_fail_with_the_reason(case, obs, why):
    v = check_diagnosis(obs)
    assert v.holds is False, case
    assert why in v.observed, f"{case}: expected {why!r} in {v.observed}"


def test_from_the_diagnosis_json():
    d = DiagnosisObs.from_dict(
        {
            "target": "team-a/alloc",
            "kind": "pod",
            "order": list(ORDER),
            "first_cause": "allocation",
            "also_explains": ["application"],
            "not_checked": [],
            "findings": [
                {"check": "admission", "explains": False, "key_evidence": []},
                {"check": "allocation", "explains": True, "key_evidence": ["holder:team-a/llm"]},
                {"check": "memory", "explains": False, "key_evidence": []},
                {"check": "placement", "explains": False, "key_evidence": ["only-match:gpu-a"]},
                {"check": "application", "explains": True, "key_evidence": ["starved:team-a/s"]},
            ],
        }
    )
    assert d == DiagnosisObs(
        "team-a/alloc",
        "allocation",
        ("holder:team-a/llm",),
        ORDER,
        ("application",),
        explaining=("allocation", "application"),
        kind="pod",
        order=ORDER,
    )
