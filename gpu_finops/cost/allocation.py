"""Split one node-interval's cost among the tenants whose pods held its GPUs, exactly.

Weights are physical-GPU-seconds: a pod holding g GPUs of a node whose cards are time-sliced into r
replicas holds g/r cards for the seconds it overlapped the interval. The node offers
`gpu_count x observed seconds` of them; what nobody held is the `unallocated` share. If the pods held more
than the node offered (clock skew between the pod and node readings), the pods' shares are scaled to fill
it and nothing is unallocated.

Amounts are decimal.Decimal on a fixed quantum (money: one micro-dollar, MONEY_QUANTUM). The split is
the largest-remainder (Hamilton) method: every share gets its exact amount rounded down to the quantum,
then the quanta left over go one each to the shares with the largest remainders (ties: in row order).
So the rows of a node always sum to the node's amount exactly, and no row is off its exact share by a
quantum or more.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

from gpu_finops.cost.gpu_holdings import GpuHolding

MONEY_QUANTUM = Decimal("0.000001")  # USD: one micro-dollar, the precision of every cost column
QUANTITY_QUANTUM = Decimal("0.000000001")  # hours: PricingQuantity and ConsumedQuantity
UNALLOCATED = "unallocated"  # the tenant of GPU-seconds nobody held


def to_decimal(value: float | int | str | Decimal, quantum: Decimal = MONEY_QUANTUM) -> Decimal:
    """A float from the collector onto the quantum (half-even), through its shortest repr, so 0.031017
    becomes Decimal('0.031017') and not the binary value's 55 digits."""
    raw = value if isinstance(value, Decimal) else Decimal(repr(value) if isinstance(value, float) else value)
    return raw.quantize(quantum, rounding=ROUND_HALF_EVEN)


@dataclass(frozen=True)
class Share:
    """One row's claim on a node-interval: a (tenant, namespace), or the unallocated remainder."""

    tenant: str
    namespace: str | None
    gpu_seconds: Fraction  # physical-GPU-seconds held in the interval
    weight: Fraction  # of the node-interval; a node's weights sum to exactly 1
    pods: tuple[str, ...] = ()


def shares(
    node: str,
    start: datetime,
    end: datetime,
    capacity_gpu_seconds: Fraction,
    holdings: Iterable[GpuHolding],
) -> list[Share]:
    """The node-interval's shares by GPU-seconds held; the unallocated share last. Pure."""
    held: dict[tuple[str, str], Fraction] = {}
    pods: dict[tuple[str, str], list[str]] = {}
    for h in holdings:
        if h.node != node:
            continue
        seconds = h.seconds_within(start, end) * h.physical_gpus
        if seconds <= 0:
            continue
        key = (h.tenant, h.namespace)
        held[key] = held.get(key, Fraction(0)) + seconds
        pods.setdefault(key, []).append(h.pod)
    total = sum(held.values(), Fraction(0))
    whole = max(capacity_gpu_seconds, total)
    if whole <= 0:  # no capacity observed and nobody held anything: the whole interval is unallocated
        return [Share(UNALLOCATED, None, Fraction(0), Fraction(1))]
    out = [
        Share(tenant, ns, seconds, seconds / whole, tuple(sorted(pods[(tenant, ns)])))
        for (tenant, ns), seconds in sorted(held.items())
    ]
    free = whole - total
    if free > 0:
        out.append(Share(UNALLOCATED, None, free, free / whole))
    return out


def split(amount: Decimal, weights: Sequence[Fraction], quantum: Decimal = MONEY_QUANTUM) -> list[Decimal]:
    """`amount` (on `quantum`) split by `weights` (summing to 1) so the parts sum to it exactly."""
    if not weights:
        raise ValueError("nothing to split among: no weights")
    if sum(weights, Fraction(0)) != 1 or any(w < 0 for w in weights):
        raise ValueError(f"weights must be non-negative and sum to 1, got {[str(w) for w in weights]}")
    if amount != amount.quantize(quantum):
        raise ValueError(f"{amount} is not on the quantum {quantum}: quantize it first (to_decimal)")
    sign = -1 if amount < 0 else 1
    units = int(abs(amount) / quantum)  # the amount in whole quanta
    exact = [Fraction(units) * w for w in weights]
    floors = [int(e) for e in exact]  # int() of a non-negative Fraction is its floor
    left = units - sum(floors)
    # Largest remainder first; ties broken by position, so the result is deterministic.
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return [sign * quantum * n for n in floors]
