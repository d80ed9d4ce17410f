"""Generated near-misses, per act: every holding world holds; every broken world fails naming the clause
its transformation breaks. Fixed seed (derandomize) and a bounded example count: seconds, not minutes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from assertions.admission import check_admission
from assertions.cold_start import check_cold_start
from assertions.cost import check_cost
from assertions.diagnosis import check_diagnosis
from assertions.interruption import check_interruption
from assertions.mig import check_mig
from assertions.mps import check_mps
from assertions.preemption import check_preemption
from assertions.timeslicing import check_timeslicing
from tests.assertions.near_misses import Break, act1, act2, act3, act4, act5, act6, act7, act8, act9

settings.register_profile(
    "claims",
    derandomize=True,  # the same examples every run: a failure here is reproducible, never flaky
    max_examples=20,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
CLAIMS = settings.get_profile("claims")

ACTS = {
    "act1": (act1, check_cold_start),
    "act2": (act2, check_admission),
    "act3": (act3, check_preemption),
    "act4": (act4, check_timeslicing),
    "act5": (act5, check_interruption),
    "act6": (act6, check_cost),
    "act7": (act7, check_diagnosis),
    "act8": (act8, check_mig),
    "act9": (act9, check_mps),
}
CASES = [(act, b) for act, (module, _) in ACTS.items() for b in module.BREAKS]


@pytest.mark.parametrize("act", sorted(ACTS))
def test_every_holding_world_holds(act):
    module, checker = ACTS[act]

    @CLAIMS
    @given(module.holding())
    def holds(world):
        v = checker(world)
        assert v.holds, v.render()

    holds()


@pytest.mark.parametrize("act, near_miss", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_every_broken_world_fails_naming_its_clause(act, near_miss: Break):
    module, checker = ACTS[act]

    @CLAIMS
    @given(module.holding())
    def fails(world):
        v = checker(near_miss.apply(world))
        assert not v.holds, f"{near_miss} still holds:\n{v.render()}"
        assert near_miss.clause in v.failed_clauses, f"{near_miss}: failed {v.failed_clauses}\n{v.render()}"

    fails()


def test_every_clause_has_a_near_miss():
    """A clause with no generated near-miss is a clause nothing shows to matter."""
    for act, (module, _) in ACTS.items():
        checker_module = __import__(f"assertions.{CHECKERS[act]}", fromlist=["CLAUSES"])
        names = {c.__name__ for c in checker_module.CLAUSES}
        broken = {b.clause for b in module.BREAKS}
        assert names <= broken, f"{act}: clauses without a near-miss: {sorted(names - broken)}"
        assert broken <= names, f"{act}: near-misses naming no clause: {sorted(broken - names)}"


CHECKERS = {
    "act1": "cold_start",
    "act2": "admission",
    "act3": "preemption",
    "act4": "timeslicing",
    "act5": "interruption",
    "act6": "cost",
    "act7": "diagnosis",
    "act8": "mig",
    "act9": "mps",
}
