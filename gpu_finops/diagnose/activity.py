"""What a GPU and its holder were doing over the window, from DCGM averages: thresholds and classes.

Low SM activity is not free capacity. A holder is classified so the diagnosis can say whether a held
device is owned without being used (allocation), owned with its memory resident (memory), or owned by
a workload that tries to compute but is starved or transfer-bound (application).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from statistics import fmean

from gpu_finops.diagnose.model import GpuStats

# Thresholds, over the window's averages.
SM_LOW = 0.10  # SM_ACTIVE below this: the device looks idle
SM_BUSY = 0.50  # SM_ACTIVE at or above this: the device is doing work
FB_RESIDENT = 0.80  # FB_USED / (FB_USED + FB_FREE) at or above this: VRAM is resident, no room for another
FB_IN_USE = 0.05  # below this the card holds no working set: idle, not starved
PCIE_LOW_BPS = 100e6  # PCIe RX+TX below this (bytes/s), with low SM: nothing is feeding the GPU
PCIE_HIGH_BPS = 1e9  # PCIe RX+TX at or above this (bytes/s): transfers dominate
OCCUPANCY_LOW = 0.20  # SM_OCCUPANCY below this, with high PCIe: kernels too small (batches too small)

# Holder classes.
BUSY = "busy"
SMALL_BATCH = "small-batch"  # high PCIe, low SM occupancy: transfer-bound, batches too small
RESIDENT = "resident"  # low SM, VRAM resident: a model held warm
STARVED = "data-starved"  # low SM, low PCIe, a working set loaded but not resident: waiting on input
IDLE = "idle"  # low SM, nothing else to say
ACTIVE = "active"  # some work, not busy
UNKNOWN = "unknown"  # no DCGM series for it

APPLICATION_BOUND = frozenset({STARVED, SMALL_BATCH})


@dataclass(frozen=True)
class Activity:
    """A holder's (or a card's) window averages over its GPU rows, and its class."""

    sm_active: float | None
    sm_occupancy: float | None
    fb_ratio: float | None
    fb_used_mib: float | None
    pcie_bps: float | None
    nvlink_bps: float | None
    power_w: float | None
    gpus: tuple[str, ...]  # "node/uuid"

    @property
    def kind(self) -> str:
        return classify(self)

    def to_dict(self) -> dict[str, object]:
        return {
            "class": self.kind,
            "sm_active": _r(self.sm_active),
            "sm_occupancy": _r(self.sm_occupancy),
            "fb_used_ratio": _r(self.fb_ratio),
            "fb_used_mib": _r(self.fb_used_mib, 0),
            "pcie_bytes_per_s": _r(self.pcie_bps, 0),
            "nvlink_bytes_per_s": _r(self.nvlink_bps, 0),
            "power_w": _r(self.power_w, 1),
            "gpus": list(self.gpus),
        }


def _r(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else round(v, digits)


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def _max(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def activity(rows: list[GpuStats]) -> Activity | None:
    """Averages over the given rows (one card, or the cards one holder holds); None for no rows."""
    if not rows:
        return None
    return Activity(
        sm_active=_mean([r.sm_active for r in rows]),
        sm_occupancy=_mean([r.sm_occupancy for r in rows]),
        fb_ratio=_max([r.fb_ratio for r in rows]),
        fb_used_mib=_mean([r.fb_used_mib for r in rows]),
        pcie_bps=_mean([r.pcie_bps for r in rows]),
        nvlink_bps=_mean([r.nvlink_bps for r in rows]),
        power_w=_mean([r.power_w for r in rows]),
        gpus=tuple(sorted({f"{r.node}/{r.uuid}" for r in rows})),
    )


_READINGS = tuple(f.name for f in fields(GpuStats) if f.name not in ("node", "gpu", "uuid", "holder"))
# FB_USED, which dcgm-exporter reports per process on a held card (gpu_finops/facts/dcgm.PER_PROCESS)
_PER_PROCESS_READINGS = ("fb_used_mib",)


def card_activity(rows: list[GpuStats]) -> Activity | None:
    """One card's figures from all its rows. dcgm-exporter with KUBERNETES_VIRTUAL_GPUS (docs/infra.md,
    "Time-sliced attribution") gives a held card's FB_USED a series of the card's own, without pod labels,
    beside per-pod series that hold each pod's share, and copies every other field's card value onto each
    holder's series. So, where a card has both kinds of row: FB_USED is the larger of the card's own row
    and the sum of the shares (the own row averages in any part of the window the card was unheld; the
    shares cover the held part), and every other reading is the holders' (the copies; a holderless row
    there is the card before it was held). Averaging the shares with the whole would halve the card."""
    own = [r for r in rows if r.holder is None]
    held = [r for r in rows if r.holder is not None]
    if not own or not held:
        return activity(rows)
    merged: dict[str, float | None] = {}
    for name in _READINGS:
        shares = [v for r in held if (v := getattr(r, name)) is not None]
        card = [v for r in own if (v := getattr(r, name)) is not None]
        if name in _PER_PROCESS_READINGS:
            merged[name] = max([*card, sum(shares)] if shares else card, default=None)
        else:
            merged[name] = _mean(list(shares)) if shares else _mean(list(card))
    return activity([replace(held[0], holder=None, **merged)])


def holder_activity(rows: list[GpuStats], cards: dict[str, dict[str, Activity]]) -> Activity | None:
    """A holder's figures over the cards it holds. Its VRAM ratio is at least its cards' (`cards`: node ->
    UUID -> card_activity): on a time-sliced card its FB_USED is its own processes' share, so its row alone
    would call a sharer of a resident card merely loaded (data-starved) rather than resident."""
    a = activity(rows)
    if a is None:
        return None
    card_ratios = [c.fb_ratio for r in rows if (c := cards.get(r.node, {}).get(r.uuid)) is not None]
    return replace(a, fb_ratio=_max([a.fb_ratio, *card_ratios]))


def classify(a: Activity | None) -> str:
    """busy, small-batch, resident, data-starved, idle, active, or unknown (in that precedence)."""
    if a is None or a.sm_active is None:
        return UNKNOWN
    sm = a.sm_active
    if sm >= SM_BUSY:
        return BUSY
    if (
        a.pcie_bps is not None
        and a.pcie_bps >= PCIE_HIGH_BPS
        and (a.sm_occupancy is not None and a.sm_occupancy < OCCUPANCY_LOW)
    ):
        return SMALL_BATCH
    if sm < SM_LOW and a.fb_ratio is not None and a.fb_ratio >= FB_RESIDENT:
        return RESIDENT
    if (
        sm < SM_LOW
        and a.pcie_bps is not None
        and a.pcie_bps < PCIE_LOW_BPS
        and a.fb_ratio is not None
        and a.fb_ratio >= FB_IN_USE
    ):
        return STARVED
    if sm < SM_LOW:
        return IDLE
    return ACTIVE


def looks_idle_is_held(a: Activity | None, held: bool) -> bool:
    """Allocated, low SM, VRAM resident: idle on a dashboard, unavailable to the scheduler."""
    return (
        held
        and a is not None
        and a.sm_active is not None
        and a.sm_active < SM_LOW
        and a.fb_ratio is not None
        and a.fb_ratio >= FB_RESIDENT
    )
