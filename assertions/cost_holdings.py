"""Act 6's holdings clause: the collector recorded the act's own GPU pod as the holder, for its tenant."""

from __future__ import annotations

from assertions.clauses import Miss, parse_iso
from assertions.cost_obs import CostObs


def holdings_name_the_acts_pod(o: CostObs) -> list[Miss]:
    """Each record whose interval the act's pod overlapped must have holdings recorded that name the pod,
    attributed to the act's tenant; at least one record must be such an interval."""
    h = o.holder
    recs = sorted(o.records, key=lambda r: r["ChargePeriodStart"])
    if h is None or not recs:
        return []
    who = f"{h.namespace}/{h.pod}"
    want = f"GPU holdings naming {who} for tenant {h.tenant} in each interval it ran"
    overlapped = [
        r for r in recs if h.overlaps(parse_iso(r["ChargePeriodStart"]), parse_iso(r["ChargePeriodEnd"]))
    ]
    if not overlapped:
        span = f"{h.held_from.isoformat()} to {h.held_until.isoformat() if h.held_until else 'still running'}"
        return [
            Miss(
                want,
                f"no record's interval overlaps the act's pod {who} ({span}): its holding cannot be checked",
            )
        ]
    said = next((line for line in reversed(o.collector_log) if "GPU holdings" in line), None)
    misses = []
    for r in overlapped:
        at = r["ChargePeriodStart"]
        if at not in o.holdings:
            misses.append(
                Miss(
                    want,
                    f"{at}: no GPU holdings recorded for {o.node} (the collector ran without a "
                    "holdings reader, or its read failed; the export shows this interval "
                    "unallocated, x_Status no-holdings)"
                    + (f"; the collector said: {said!r}" if said else ""),
                )
            )
            continue
        held = {(x.get("namespace"), x.get("pod")): x for x in o.holdings[at]}
        mine = held.get((h.namespace, h.pod))
        if mine is None:
            names = sorted(f"{ns}/{p}" for ns, p in held) or "nobody"
            misses.append(
                Miss(want, f"{at}: the holdings recorded for {o.node} name {names}, not the act's pod {who}")
            )
        elif mine.get("tenant") != h.tenant:
            misses.append(
                Miss(
                    want,
                    f"{at}: the act's pod {who} was recorded for tenant {mine.get('tenant')!r}, "
                    f"expected {h.tenant!r}",
                )
            )
    return misses
