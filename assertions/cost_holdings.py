"""Act 6's holdings clause: the collector recorded the act's own GPU pod as the holder, for its tenant."""

from __future__ import annotations

from datetime import timedelta
from fractions import Fraction

from assertions.clauses import Miss, parse_iso
from assertions.cost_obs import CostObs, HolderObs
from gpu_finops.model import holding


def held_outside_its_life(o: CostObs, want: str) -> list[Miss]:
    """The act's pod named as holder in an interval that ended before its Job was created, or began after its
    container finished: the collector misattributed the GPU to it. (Between its Job's creation and its start it
    may hold already: devices are allocated first.)"""
    h = o.holder
    if h is None:
        return []
    # each interval's end: its record's, or for a holding with no record its start plus the longest interval
    ends = {r["ChargePeriodStart"]: parse_iso(r["ChargePeriodEnd"]) for r in o.records}
    longest = max((e - parse_iso(s) for s, e in ends.items()), default=timedelta(0))
    early = sorted(
        at
        for at, held in o.holdings.items()
        if (h.submitted_at - ends.get(at, parse_iso(at) + longest)).total_seconds() >= 1
        and any((x.get("namespace"), x.get("pod")) == (h.namespace, h.pod) for x in held)
    )
    if early:
        return [
            Miss(
                want,
                f"the act's pod {h.namespace}/{h.pod} is recorded holding the GPU in intervals {early}, which "
                f"ended before its Job was created {h.submitted_at.isoformat()}",
            )
        ]
    if h.held_until is None:
        return []
    outside = sorted(
        at
        for at, held in o.holdings.items()
        if (parse_iso(at) - h.held_until).total_seconds() >= 1
        and any((x.get("namespace"), x.get("pod")) == (h.namespace, h.pod) for x in held)
    )
    if not outside:
        return []
    return [
        Miss(
            want,
            f"the act's pod {h.namespace}/{h.pod} is recorded holding the GPU in intervals {outside}, which "
            f"began after it finished {h.held_until.isoformat()}",
        )
    ]


def holdings_name_the_acts_pod(o: CostObs) -> list[Miss]:
    """Each record whose interval the act's pod overlapped must have holdings recorded that name the pod,
    attributed to the act's tenant, on the records' node, holding the GPUs its Job asked for; at least one record must be such an interval."""
    h = o.holder
    recs = sorted(o.records, key=lambda r: r["ChargePeriodStart"])
    if h is None:
        return [
            Miss(
                "GPU holdings naming the act's pod in each interval it ran",
                "the act's pod was not observed (no holder): whom the collector should have named is unknown",
            )
        ]
    if not recs:
        return []
    who = f"{h.namespace}/{h.pod}"
    want = f"GPU holdings naming {who} for tenant {h.tenant} in each interval it ran"
    if h.held_until is not None and h.held_until < h.held_from:
        return [
            Miss(
                want,
                f"the act's pod {who} ended {h.held_until.isoformat()} before it started "
                f"{h.held_from.isoformat()}: its span is impossible",
            )
        ]
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
    misses = held_outside_its_life(o, want)
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
        twice = sum(1 for x in o.holdings[at] if (x.get("namespace"), x.get("pod")) == (h.namespace, h.pod))
        if twice > 1:
            misses.append(
                Miss(want, f"{at}: the act's pod {who} is recorded {twice} times: one holding counted twice")
            )
            continue
        mine = held.get((h.namespace, h.pod))
        if mine is None:
            names = sorted(f"{ns}/{p}" for ns, p in held) or "nobody"
            misses.append(
                Miss(want, f"{at}: the holdings recorded for {o.node} name {names}, not the act's pod {who}")
            )
        else:
            misses += _holding_fields(want, (at, r["ChargePeriodEnd"]), who, mine, h, o.node)
        misses += _the_node_held_at_most_once(want, at, o.holdings[at], o.node, r.get("x_GpuCount"))
    return misses


def _worth(x: dict) -> Fraction | None:
    """Cards' worth of one holding as the bill reads it (GpuHolding.physical_gpus): its equivalents, else its
    GPUs over the replicas per card; None when a field is not a number the model reads."""
    gpus, replicas, eq = x.get("gpus"), x.get("replicas", 1), x.get("equivalents")
    try:
        if eq is not None:
            return Fraction(str(eq))
        return holding.physical_gpus(gpus, replicas)
    except (ValueError, TypeError, ZeroDivisionError):
        return None


def _the_node_held_at_most_once(want: str, at: str, held: list[dict], node: str, cards: object) -> list[Miss]:
    """The node's holdings in one interval hold no more than its cards, and no device twice: a card recorded
    for two pods bills it twice."""
    mine = [x for x in held if x.get("node") == node]
    misses = []
    devices = [d for x in mine for d in x.get("devices") or ()]
    twice = sorted({d for d in devices if devices.count(d) > 1})
    if twice:
        misses.append(Miss(want, f"{at}: devices {twice} of {node} recorded for two holders"))
    worth = [_worth(x) for x in mine]
    if type(cards) is int and None not in worth and sum(worth, Fraction(0)) > cards:  # type: ignore[arg-type]
        holders = sorted(f"{x.get('namespace')}/{x.get('pod')}" for x in mine)
        misses.append(
            Miss(
                want,
                f"{at}: {holders} hold {sum(worth, Fraction(0))} cards' worth of {node}, which has {cards}: "  # type: ignore[arg-type]
                "more held than the node has (one card recorded for two holders, or cards the node does not have)",
            )
        )
    return misses


def _holding_fields(
    want: str, interval: tuple[str, str], who: str, mine: dict, h: HolderObs, node: str
) -> list[Miss]:
    """Every field of the pod's holding the bill reads: its tenant, the node whose card it holds, how many GPUs
    it holds and what they are worth of a card (replicas, equivalents: a whole card for the act's Job), the
    devices where they are known (whole cards, as many as its GPUs), and its span, which must overlap the
    interval (a holding of none, of another node's card, of a quarter card or outside the interval bills the
    node's interval wrongly)."""
    at = interval[0]
    misses = []
    if mine.get("tenant") != h.tenant:
        misses.append(
            Miss(
                want,
                f"{at}: the act's pod {who} was recorded for tenant {mine.get('tenant')!r}, expected {h.tenant!r}",
            )
        )
    if mine.get("node") != node:
        misses.append(
            Miss(want, f"{at}: the act's pod {who} was recorded holding a card of node {mine.get('node')!r}, "
                       f"expected {node!r} (the node the records price)")
        )  # fmt: skip
    gpus = mine.get("gpus")
    if type(gpus) is not int or gpus != h.gpus:
        misses.append(
            Miss(
                want,
                f"{at}: the act's pod {who} was recorded holding {gpus!r} GPU(s), its Job asked for {h.gpus}",
            )
        )
        return misses
    worth = _worth(mine)
    if worth != h.gpus:
        misses.append(
            Miss(
                want,
                f"{at}: the act's pod {who} was recorded holding {worth} cards' worth (replicas "
                f"{mine.get('replicas', 1)!r}, equivalents {mine.get('equivalents')!r}), its Job asked for {h.gpus} "
                "whole card(s)",
            )
        )
    devices = list(mine.get("devices") or ())
    if devices:
        try:
            kinds = [holding.device(d).kind for d in devices]
        except holding.DeviceIdError as exc:
            kinds, bad = [], str(exc)
        else:
            bad = ""
        if bad or len(devices) != gpus or any(k is not holding.Kind.WHOLE for k in kinds):
            misses.append(
                Miss(
                    want,
                    f"{at}: the act's pod {who} was recorded with devices {devices}, not {gpus} whole card(s)"
                    + (f" ({bad})" if bad else ""),
                )
            )
    try:
        start = parse_iso(mine["start"])
        end = parse_iso(mine["end"]) if mine.get("end") else None
    except (KeyError, TypeError, ValueError):
        return [
            *misses,
            Miss(want, f"{at}: the act's pod {who}'s holding has no readable start ({mine.get('start')!r})"),
        ]
    lo, hi = parse_iso(interval[0]), parse_iso(interval[1])
    if not start < hi or (end is not None and not end > lo):
        misses.append(
            Miss(
                want,
                f"{at}: the act's pod {who}'s holding spans {mine.get('start')} to {mine.get('end')}, none of the "
                f"interval to {interval[1]}",
            )
        )
    return misses
