"""Generated near-misses: per act, a hypothesis strategy for worlds where the claim holds, and per clause x
dimension a transformation that breaks exactly that. tests/assertions/test_generated_near_misses.py runs them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# the act's last look in a generated world: five minutes after the last time it recorded (a near-miss that moves
# a time later stays inside it, so what refuses it is the clause it breaks)
LOOK_AFTER_S = 300


@dataclass(frozen=True)
class Break:
    """One near-miss: the clause it must make fail, the dimension it breaks, and how."""

    clause: str
    dimension: str  # identity | ownership | time | count | provenance | state
    how: str
    apply: Callable[[Any], Any]

    def __str__(self) -> str:  # the pytest id
        return f"{self.clause}[{self.dimension}]: {self.how}"
