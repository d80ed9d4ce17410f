"""Every near-miss's failures, word for word: for each act's simplest holding world (hypothesis's first
generated example, the same every run) and each generated near-miss, the checker's every (clause,
expected, observed) must equal the reviewed text in failure_texts.json; and each simplest holding world's verdict
(claim, expected, observed, evidence) too.

The generated properties check that the right clause fails; this checks what it says, which is what a
reader of a failed act judges by (mutation testing showed no test read `expected`, so a reworded or
emptied text survived). A checker change that rewords a failure shows here as a diff to review:
regenerate with `GPU_FINOPS_UPDATE_FAILURE_TEXTS=1 pytest tests/assertions/test_failure_texts.py` and
read the diff before committing it."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest
from hypothesis import Phase, find, settings

from tests.assertions.test_generated_near_misses import ACTS, CASES

GOLDEN = Path(__file__).with_name("failure_texts.json")
UPDATE = os.environ.get("GPU_FINOPS_UPDATE_FAILURE_TEXTS") == "1"
# Generation only: its first example is the simplest choice sequence, the same however slow the run is
# (shrinking has time limits, so under mutmut's tracing it can stop at another minimum).
SIMPLEST = settings(derandomize=True, database=None, max_examples=1, deadline=None, phases=[Phase.generate])


@functools.cache
def simplest_world(act: str):
    module, _ = ACTS[act]
    return find(module.holding(), lambda _w: True, settings=SIMPLEST)


def failures(act: str, near_miss) -> list[list[str]]:
    _, checker = ACTS[act]
    v = checker(near_miss.apply(simplest_world(act)))
    return [[f.clause, f.expected, f.observed] for f in v.failures]


@functools.cache
def golden() -> dict[str, dict]:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


@pytest.mark.parametrize("act, near_miss", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_each_near_miss_fails_saying_exactly_the_reviewed_text(act, near_miss):
    got = failures(act, near_miss)
    assert near_miss.clause in [c for c, _, _ in got], got
    if UPDATE:
        return
    want = golden().get(act, {}).get(str(near_miss))
    assert want is not None, f"no reviewed text for {act} {near_miss}: regenerate (module docstring)"
    assert got == want


def holding_verdict(act: str) -> dict:
    _, checker = ACTS[act]
    return checker(simplest_world(act)).to_dict()


@pytest.mark.parametrize("act", sorted(ACTS))
def test_the_simplest_holding_world_holds_saying_exactly_the_reviewed_claim_and_evidence(act):
    got = holding_verdict(act)
    assert got["holds"], got
    if not UPDATE:
        assert got == golden()["holding"][act]


def test_zz_write_the_reviewed_texts_when_asked():
    """Runs last in this module: with GPU_FINOPS_UPDATE_FAILURE_TEXTS=1 it writes the file."""
    if not UPDATE:
        pytest.skip("GPU_FINOPS_UPDATE_FAILURE_TEXTS is not 1")
    out: dict[str, dict] = {"holding": {act: holding_verdict(act) for act in sorted(ACTS)}}
    for act, near_miss in CASES:
        out.setdefault(act, {})[str(near_miss)] = failures(act, near_miss)
    GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
