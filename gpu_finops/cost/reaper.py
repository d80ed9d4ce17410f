"""The reaper: rank GPU nodes by money not doing work, and reclaim the ones that keep wasting it.

Ranking is by idle dollars per hour over a window (idle = cost x (1 - SM_ACTIVE), from the cost table).
A node is reclaimed only when every guard passes: it belongs to our NodePool, is older than a minimum
age, was idle above the threshold for N consecutive measured intervals, and does not carry
`karpenter.sh/do-not-disrupt`. Reclaiming deletes its NodeClaim, so Karpenter drains it gracefully.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from gpu_finops.clients.karpenter import NodeClaimFacts
from gpu_finops.clients.nodes import GpuNode
from gpu_finops.cost.records import STATUS_OK, CostRecord
from gpu_finops.facts.timestamps import iso

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReapPolicy:
    nodepool: str | None  # None: no NodePool was chosen, so no node is eligible (a dry run still ranks)
    window: timedelta = timedelta(hours=1)
    min_age: timedelta = timedelta(minutes=30)
    idle_threshold: float = 0.9  # idle share (1 - SM_ACTIVE) at or above which an interval counts as idle
    consecutive: int = 10  # measured intervals in a row


@dataclass
class Candidate:
    node: GpuNode
    idle_usd_per_hour: float | None
    cost_usd_per_hour: float | None
    measured_intervals: int
    consecutive_idle: int
    eligible: bool
    reasons: list[str] = field(default_factory=list)  # why not eligible (empty when eligible)
    action: str = "none"


def _trailing_idle(records: list[CostRecord], threshold: float, interval_seconds: float | None) -> int:
    """Idle intervals in a row, counted back from the newest; a gap or an unmeasured interval breaks it."""
    count = 0
    previous_start: str | None = None
    for record in sorted(records, key=lambda r: r.ChargePeriodStart, reverse=True):
        if previous_start is not None and record.ChargePeriodEnd != previous_start:
            break  # an interval is missing between these two
        if record.x_Status != STATUS_OK or record.x_SmActive is None or (1 - record.x_SmActive) < threshold:
            break
        count += 1
        previous_start = record.ChargePeriodStart
    return count


def rank(
    nodes: Iterable[GpuNode], records: Iterable[CostRecord], policy: ReapPolicy, now: datetime
) -> list[Candidate]:
    """Pure ranking and eligibility. Highest idle dollars per hour first; unmeasured nodes last."""
    since = iso(now - policy.window)
    by_node: dict[str, list[CostRecord]] = {}
    for record in records:
        if record.ChargePeriodStart >= since:
            by_node.setdefault(record.ResourceName, []).append(record)
    hours = policy.window.total_seconds() / 3600
    out: list[Candidate] = []
    for node in nodes:
        mine = by_node.get(node.name, [])
        measured = [r for r in mine if r.x_Status == STATUS_OK and r.x_IdleCost is not None]
        idle = sum(r.x_IdleCost for r in measured) / hours if measured else None  # type: ignore[misc]
        cost = sum(r.EffectiveCost or 0 for r in mine) / hours if mine else None
        streak = _trailing_idle(mine, policy.idle_threshold, None)
        reasons = []
        if policy.nodepool is None:
            reasons.append("no NodePool chosen (--nodepool)")
        elif node.nodepool != policy.nodepool:
            reasons.append(f"not in NodePool {policy.nodepool} (is {node.nodepool or 'none'})")
        age = now - node.created
        if age < policy.min_age:
            reasons.append(f"younger than {policy.min_age} ({age})")
        if node.do_not_disrupt:
            reasons.append("annotated karpenter.sh/do-not-disrupt")
        if not measured:
            reasons.append("no measured interval in the window (idle share unknown, never assumed)")
        if streak < policy.consecutive:
            reasons.append(f"idle {streak} interval(s) in a row, needs {policy.consecutive}")
        if node.deleted:
            reasons.append("already being deleted")
        out.append(Candidate(node, idle, cost, len(measured), streak, not reasons, reasons))
    out.sort(key=lambda c: (c.idle_usd_per_hour is None, -(c.idle_usd_per_hour or 0)))
    return out


class NodeClaims(Protocol):
    def nodeclaims(self) -> list[NodeClaimFacts]: ...

    def delete_nodeclaim(self, name: str) -> None: ...


def reap(candidates: list[Candidate], karpenter: NodeClaims, *, apply: bool) -> list[Candidate]:
    """Delete the NodeClaim of each eligible candidate (only with apply=True). Records what it did."""
    claims = {c.node_name: c for c in karpenter.nodeclaims() if c.node_name}
    for cand in candidates:
        if not cand.eligible:
            continue
        claim = claims.get(cand.node.name)
        if claim is None:
            cand.action = "skipped: no NodeClaim owns this node (not Karpenter's)"
        elif claim.nodepool and claim.nodepool != cand.node.nodepool:
            cand.action = f"skipped: NodeClaim {claim.name} belongs to NodePool {claim.nodepool}"
        elif not apply:
            cand.action = f"would delete NodeClaim {claim.name} (dry run)"
        else:
            karpenter.delete_nodeclaim(claim.name)
            cand.action = f"deleted NodeClaim {claim.name}"
            log.info(
                "reaper: deleted NodeClaim %s of node %s (idle $%.2f/h)",
                claim.name,
                cand.node.name,
                cand.idle_usd_per_hour or 0,
            )
    return candidates
