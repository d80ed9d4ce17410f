"""What act 6 observed: the node's cost records and, for the holdings clause, the act's own GPU pod.
Both clause modules (cost.py, cost_holdings.py) read these types, so they live apart from either."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from assertions.clauses import before, require_aware


@dataclass(frozen=True)
class HolderObs:
    """The act's own GPU pod, as the act saw it: who the collector's holdings record must name."""

    namespace: str
    pod: str
    tenant: str  # the tenant the act ran it for (its LocalQueue's ClusterQueue)
    held_from: datetime  # the pod's container started (its devices were allocated no later)
    held_until: datetime | None = None  # its container finished; None: still running when the act read it
    gpus: int = 1  # the GPUs its Job asked for (act 6: one whole card): what a holding of it must record
    submitted_at: datetime = field(
        kw_only=True
    )  # its Job's creationTimestamp: nothing of it held a GPU before

    def __post_init__(self) -> None:
        require_aware(self)
        empty = [f for f in ("namespace", "pod", "tenant") if not str(getattr(self, f)).strip()]
        if empty:
            raise ValueError(f"HolderObs {empty} empty: a holding naming nobody matches any other that does")
        if isinstance(self.gpus, bool) or not isinstance(self.gpus, int) or self.gpus < 1:
            raise ValueError(f"HolderObs.gpus {self.gpus!r}: the act's Job asks for at least one GPU")
        if before(self.held_from, self.submitted_at):
            raise ValueError(
                f"HolderObs {self.namespace}/{self.pod}: started {self.held_from.isoformat()}, before its Job was "
                f"created {self.submitted_at.isoformat()}: the times are of two objects"
            )

    def overlaps(self, start: datetime, end: datetime) -> bool:
        return self.held_from < end and (self.held_until is None or self.held_until > start)


@dataclass(frozen=True)
class CostObs:
    node: str
    records: Sequence[Mapping[str, Any]]  # cost records (FOCUS + x_ columns) for this node, any order
    # $/h the node should be charged at: one price, or per interval (ChargePeriodStart -> average $/h over
    # the node's part of it; spot prices are a step function, so each interval has its own)
    expected_unit_price: float | Mapping[str, float]
    collector_log: Sequence[str] = ()
    min_records: int = 2
    expected_rate_source: str | None = None  # x_RateSource every record must carry (spot, on-demand, catalog)
    # the node's life as the act saw it in Kubernetes: each record's instance-seconds must agree with it
    node_created: datetime | None = None
    node_deleted: datetime | None = None  # None: still there when the act read the records
    # locally the act told the simulator the load; SM_ACTIVE must come back as that, within the tolerance
    expected_sm_active: float | None = None
    sm_tolerance: float = 0.005
    # who held the node's GPUs, as the collector recorded it: ChargePeriodStart -> the holdings recorded for
    # the node in that interval (GpuHolding dicts); an interval absent had none recorded. Checked (each
    # interval the act's pod overlapped must name it, for its tenant) when `holder` is given.
    holdings: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    holder: HolderObs | None = None
    # the act ran a compute load on the node's GPU over the holder's span (local: the simulator told a load;
    # AWS: a CUDA kernel in a loop): SM_ACTIVE identically zero over it is a metric that was never there
    compute_load: bool = False

    def __post_init__(self) -> None:
        require_aware(self)

    def unit_price(self, start: str) -> float | None:
        if isinstance(self.expected_unit_price, Mapping):
            return self.expected_unit_price.get(start)
        return self.expected_unit_price
