"""The engine's diagnoses through act 7's checker: the right order holds, placement-first fails it."""

from __future__ import annotations

from assertions.diagnosis import DiagnosisActObs, DiagnosisObs, Situation, check_diagnosis
from gpu_finops.diagnose.engine import diagnose_pod, diagnose_workload
from gpu_finops.diagnose.model import ADMISSION, ALLOCATION, APPLICATION, MEMORY, ORDER, PLACEMENT
from tests.gpu_finops.diagnose import diagnose_fixtures as fx

PLACEMENT_FIRST = (PLACEMENT, ADMISSION, ALLOCATION, MEMORY, APPLICATION)

CASES = [
    ("alloc", fx.allocation_situation, ALLOCATION, ("holder:team-a/llm-a", "holder:team-a/llm-b"), ()),
    ("mem", fx.memory_situation, MEMORY, ("vram-full:gpu-ts/GPU-gpu-ts-0",), ()),
    ("place", fx.placement_situation, PLACEMENT, ("ruled-out:gpu-tainted:taint", "only-match:gpu-busy"), ()),
    ("app", fx.application_situation, APPLICATION, ("starved:team-a/starved",), ()),
    (
        "alloc+place",
        fx.allocation_and_placement_situation,
        ALLOCATION,
        ("holder:team-a/llm-a",),
        (PLACEMENT,),
    ),
]


def run(order):
    situations, diagnoses = [], []
    for name, build, first, key, also in CASES:
        pod, cluster = build()
        d = diagnose_pod(pod, cluster, order)
        target = f"{name}/{pod.name}"
        situations.append(Situation(target, first, key, also))
        diagnoses.append(DiagnosisObs.from_dict(d.to_dict() | {"target": target}))
    w, cluster = fx.admission_and_placement_situation()
    d = diagnose_workload(w, cluster, order)
    situations.append(
        Situation(w.key, ADMISSION, ("workload:team-a/wl-tainted", "QuotaReserved=False"), (PLACEMENT,))
    )
    diagnoses.append(DiagnosisObs.from_dict(d.to_dict()))
    return check_diagnosis(DiagnosisActObs(tuple(situations), tuple(diagnoses)))


def test_the_engine_passes_act_7s_checker():
    v = run(ORDER)
    assert v.holds, v.render()


def test_placement_checked_first_fails_it():
    v = run(PLACEMENT_FIRST)
    assert not v.holds
    assert "alloc+place/waiting: first cause placement, expected allocation" in v.observed
    assert "team-a/wl-tainted: first cause placement, expected admission" in v.observed
