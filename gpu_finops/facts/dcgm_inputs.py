"""How a fleet's exporter spells the GPU inputs: metric names, the node label, GPU_UTIL's unit.

One `Spelling` is read by the collector (gpu_finops/cost/collector.py), the ledger's rules and alerts
(gpu_finops/ledger/rules.py, gpu_finops/ledger/alerts.py) and the diagnosis (gpu_finops/diagnose/prom_observer.py), so the three agree on
what a series is called and what its unit is. Presets cover the pinned exporter and each documented rename
(docs/alerts.md, "Inputs as fleets spell them"); a YAML file can spell anything else.

GPU_UTIL's unit is read from the data, never guessed (`util_unit`): a value above 1 is a percentage, a
fleet whose every value is 0..1 is ambiguous unless the spelling declares the unit, and that is an error
naming the series and the fix.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_finops.facts import dcgm

PERCENT, RATIO, AUTO = "percent", "ratio", "auto"
# every value was 0: the same figure in either unit, so nothing had to be guessed
ZERO = "percent|ratio (all zero)"
UNITS = (AUTO, PERCENT, RATIO)


@dataclass(frozen=True)
class Spelling:
    """The names and units one exporter (and the pipeline between it and Prometheus) gives the inputs."""

    name: str
    gpu_util: str = dcgm.GPU_UTIL
    sm_active: str = dcgm.SM_ACTIVE
    sm_occupancy: str = dcgm.SM_OCCUPANCY
    power: str = dcgm.POWER_USAGE  # watts
    sm_clock: str = dcgm.SM_CLOCK
    fb_used: str = dcgm.FB_USED
    fb_free: str = dcgm.FB_FREE
    pcie_tx: str = dcgm.PCIE_TX_BYTES
    pcie_rx: str = dcgm.PCIE_RX_BYTES
    nvlink_tx: str = dcgm.NVLINK_TX_BYTES
    nvlink_rx: str = dcgm.NVLINK_RX_BYTES
    # the node label, in the order readers try it (a series with none of them cannot be charged to a node)
    hostname_labels: tuple[str, ...] = dcgm.HOSTNAME_LABELS
    # `auto`: read from the data (an error when the data cannot tell); `percent` or `ratio`: declared, and
    # still checked against the data (a ratio over 1 is an error)
    gpu_util_unit: str = AUTO
    sm_clock_per_mhz: float = 1.0  # the clock series' value for 1 MHz (1e6 where it is in hertz)
    fb_per_mib: float = 1.0  # the memory series' value for 1 MiB (1048576 where it is in bytes)
    source: str = ""  # where this spelling is documented

    @property
    def hostname_label(self) -> str:
        """The label the ledger's rules and the alerts name the node by (the first spelling)."""
        return self.hostname_labels[0]

    @property
    def collected(self) -> tuple[str, ...]:
        """What the collector queries every cycle (the spelling of `dcgm.COLLECTED`)."""
        return (self.gpu_util, self.sm_active, self.sm_occupancy, self.power, self.sm_clock)

    @property
    def diagnosed(self) -> tuple[str, ...]:
        """What the diagnosis reads per GPU (the spelling of `dcgm.DIAGNOSED`)."""
        return (
            self.sm_active,
            self.sm_occupancy,
            self.fb_used,
            self.fb_free,
            self.pcie_tx,
            self.pcie_rx,
            self.nvlink_tx,
            self.nvlink_rx,
            self.power,
        )

    def canonical(self, metric: str) -> str:
        """The pinned exporter's name for one of this spelling's metric names (the name readers key on)."""
        for name in _METRIC_FIELDS:
            if getattr(self, name) == metric:
                return getattr(PINNED, name)
        return metric

    def spelled(self, metric: str) -> str:
        """This spelling's name for one of the pinned exporter's metric names (`canonical`'s inverse)."""
        for name in _METRIC_FIELDS:
            if getattr(PINNED, name) == metric:
                return getattr(self, name)
        return metric

    def hostname_of(self, labels: dict[str, str]) -> str | None:
        """The node a series' GPU sits on, under any of this spelling's node labels; None when none."""
        for label in self.hostname_labels:
            if labels.get(label):
                return labels[label]
        return None


_METRIC_FIELDS = (
    "gpu_util",
    "sm_active",
    "sm_occupancy",
    "power",
    "sm_clock",
    "fb_used",
    "fb_free",
    "pcie_tx",
    "pcie_rx",
    "nvlink_tx",
    "nvlink_rx",
)

# Where each spelling below is read from: upstream's own text (release notes, the tag's files, the go-dcgm
# the exporter pins). The exact words are in docs/alerts.md ("Where the spellings come from").
SRC_483_NOTES = (
    "dcgm-exporter 4.6.0-4.8.3 release notes (NVIDIA/dcgm-exporter#711; docs.nvidia.com DCGM Exporter "
    "Release Notes): 'Rename the Hostname label to hostname (#655)', commit d5e5f51"
)
SRC_483_CSV = (
    "NVIDIA/dcgm-exporter@4.6.0-4.8.3 (7ad58324) etc/default-counters.csv: DCGM_FI_DEV_GPU_UTIL (in %), "
    "DCGM_FI_DEV_SM_CLOCK (in MHz), DCGM_FI_DEV_POWER_USAGE (in W), DCGM_FI_DEV_FB_USED/FREE (in MiB), "
    "DCGM_FI_PROF_SM_ACTIVE/SM_OCCUPANCY (commented out), DCGM_FI_PROF_PCIE_TX/RX_BYTES"
)
SRC_484_NOTES = (
    "dcgm-exporter 4.8.4 release notes (NVIDIA/dcgm-exporter#745): new opt-in fields, no rename in the part "
    "read (its excerpt ends within 'Metrics and Kubernetes')"
)
SRC_490_NOTES = (
    "dcgm-exporter 4.9.0 release notes: 'Rename the 23 default and profiling-preset fields that DCGM 4.7 "
    "deprecates to their new DCGM 4.7 names. Eleven of them also change unit: clocks from MHz to hertz, "
    "..., utilization from a percentage to a 0 to 1 ratio, GPU memory from MiB to bytes'"
)
SRC_GO_DCGM = "github.com/NVIDIA/go-dcgm@v1.4611.2 pkg/dcgm/const_fields.go"  # dcgm-exporter 4.8.4's go-dcgm
SRC_4100_NOTES = (
    "dcgm-exporter 4.10.0 release notes (github.com/NVIDIA/dcgm-exporter/releases/tag/4.10.0): "
    "'DCGM_FI_PROF_PCIE_TX_BYTES -> DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND' (and RX, NVLink TX/RX); "
    "'All four still use bytes per second'"
)


@dataclass(frozen=True)
class Rename:
    """One field an exporter release renames, and what says so. `confirmed`: the new name is in upstream's
    text; otherwise it is reported (the notes say the field changes) but its new name was not found, so no
    preset uses it and a fleet spells it in a YAML file (docs/alerts.md)."""

    release: str
    field: str  # the Spelling field
    old: str
    new: str | None  # None: the new name was not found in any upstream text read
    source: str
    confirmed: bool = True
    scale: tuple[str, float] | None = None  # a Spelling scale the new unit needs (name, value)


RENAMES: tuple[Rename, ...] = (
    # 4.9.0: the notes name the class and the unit change; go-dcgm (the release before 4.9's) names each
    # replacement in its own words: "<old> is deprecated; use <new>" or "Deprecated: Use <new> instead."
    Rename(
        "4.9",
        "gpu_util",
        dcgm.GPU_UTIL,
        "DCGM_FI_DEV_GPU_UTIL_RATIO",
        f"{SRC_490_NOTES}; {SRC_GO_DCGM}: 'DCGM_FI_DEV_GPU_UTIL is deprecated; use DCGM_FI_DEV_GPU_UTIL_RATIO'",
    ),
    Rename(
        "4.9",
        "sm_active",
        dcgm.SM_ACTIVE,
        "DCGM_FI_PROF_SM_UTIL_RATIO",
        f"{SRC_490_NOTES}; {SRC_GO_DCGM}: 'DCGM_FI_PROF_SM_ACTIVE is deprecated; use DCGM_FI_PROF_SM_UTIL_RATIO'",
    ),
    Rename(
        "4.9",
        "sm_occupancy",
        dcgm.SM_OCCUPANCY,
        "DCGM_FI_PROF_SM_OCCUPANCY_RATIO",
        f"{SRC_490_NOTES}; {SRC_GO_DCGM}: 'DCGM_FI_PROF_SM_OCCUPANCY is deprecated; use "
        "DCGM_FI_PROF_SM_OCCUPANCY_RATIO'",
    ),
    Rename(
        "4.9",
        "power",
        dcgm.POWER_USAGE,
        "DCGM_FI_DEV_BOARD_POWER_WATTS",
        f"{SRC_490_NOTES}; {SRC_GO_DCGM}: 'DCGM_FI_DEV_POWER_USAGE is deprecated; use "
        "DCGM_FI_DEV_BOARD_POWER_WATTS'",
    ),
    Rename(
        "4.9",
        "sm_clock",
        dcgm.SM_CLOCK,
        "DCGM_FI_DEV_SM_CLOCK_HERTZ",
        f"{SRC_490_NOTES}; {SRC_GO_DCGM}: 'DCGM_FI_DEV_SM_CLOCK represents Deprecated: Use "
        "DCGM_FI_DEV_SM_CLOCK_HERTZ instead', 'SM clock for the device in hertz'",
        scale=("sm_clock_per_mhz", 1_000_000.0),
    ),
    # "GPU memory from MiB to bytes": the new names are in no upstream text read here (go-dcgm v1.4611.2
    # has no DCGM_FI_DEV_FB_*_BYTES; 4.9's go-dcgm v1.4712.2 is not served to us), so no preset guesses
    # them: a 4.9 fleet names them in a spelling file with fb_per_mib: 1048576.
    Rename(
        "4.9", "fb_used", dcgm.FB_USED, None, SRC_490_NOTES, confirmed=False, scale=("fb_per_mib", 1048576.0)
    ),
    Rename(
        "4.9", "fb_free", dcgm.FB_FREE, None, SRC_490_NOTES, confirmed=False, scale=("fb_per_mib", 1048576.0)
    ),
    *(
        Rename("4.10", f, old, old + "_PER_SECOND", SRC_4100_NOTES)
        for f, old in (
            ("pcie_tx", dcgm.PCIE_TX_BYTES),
            ("pcie_rx", dcgm.PCIE_RX_BYTES),
            ("nvlink_tx", dcgm.NVLINK_TX_BYTES),
            ("nvlink_rx", dcgm.NVLINK_RX_BYTES),
        )
    ),
)


def _renamed(base: Spelling, release: str, name: str, source: str, **extra: Any) -> Spelling:
    """`base` with every confirmed rename of `release` applied (and the scale its new unit needs)."""
    changes: dict[str, Any] = {"name": name, "source": source, **extra}
    for r in RENAMES:
        if r.release == release and r.confirmed:
            changes[r.field] = r.new
            if r.scale:
                changes[r.scale[0]] = r.scale[1]
    return dataclasses.replace(base, **changes)


# The pinned dcgm-exporter (gpu_finops/facts/config.py: 4.6.0-4.8.3) and 4.8.4, which renamed nothing: `hostname`
# since 4.8.3 (NVIDIA/dcgm-exporter#655), `Hostname` still read for a fleet mid-rollout.
PINNED = Spelling(name="dcgm-exporter-4.8", source=f"{SRC_483_CSV}; {SRC_483_NOTES}; {SRC_484_NOTES}")
PRESETS: dict[str, Spelling] = {
    PINNED.name: PINNED,
    # before 4.8.3: the node in `Hostname`
    "dcgm-exporter-pre-4.8.3": dataclasses.replace(
        PINNED,
        name="dcgm-exporter-pre-4.8.3",
        hostname_labels=(dcgm.OLD_HOSTNAME_LABEL, dcgm.HOSTNAME_LABEL),
        source=f"{SRC_483_NOTES} (NVIDIA/dcgm-exporter@4.5.3-4.8.2 internal/pkg/rendermetrics: `Hostname=`)",
    ),
}
# 4.9.0: the DCGM 4.7 names (RENAMES), utilization as a 0-1 ratio, clocks in hertz
PRESETS["dcgm-exporter-4.9"] = _renamed(
    PINNED, "4.9", "dcgm-exporter-4.9", f"{SRC_490_NOTES}; {SRC_GO_DCGM}", gpu_util_unit=RATIO
)
# 4.10.0: the four profiling byte rates gain `_PER_SECOND` (same unit)
PRESETS["dcgm-exporter-4.10"] = _renamed(
    PRESETS["dcgm-exporter-4.9"], "4.10", "dcgm-exporter-4.10", SRC_4100_NOTES
)


class SpellingError(ValueError):
    """A spelling that cannot be used, or data that does not fit it; the message names which and why."""


def load_spelling(value: str | None) -> Spelling:
    """A preset by name, or a YAML file (`preset:` to start from, then any `Spelling` field). None: the
    pinned exporter's."""
    if not value:
        return PINNED
    if value in PRESETS:
        return PRESETS[value]
    path = Path(value)
    if not path.is_file():
        raise SpellingError(
            f"exporter spelling {value!r}: neither a preset ({', '.join(PRESETS)}) nor a readable YAML file"
        )
    from gpu_finops.facts import input_files
    from gpu_finops.facts.errors import ConfigError

    try:
        body: Any = input_files.read_yaml(path, "exporter spelling")
    except ConfigError as exc:  # argparse would swallow a ValueError's text: the message travels as this
        raise SpellingError(f"exporter spelling {exc}") from None
    if not isinstance(body, dict):
        raise SpellingError(f"exporter spelling {value}: expected a mapping of Spelling fields")
    return spelling_from_dict(body, where=value)


def spelling_from_dict(body: dict[str, Any], where: str = "spelling") -> Spelling:
    base = PRESETS.get(str(body.get("preset", PINNED.name)))
    if base is None:
        raise SpellingError(f"{where}: preset {body.get('preset')!r} is not one of {', '.join(PRESETS)}")
    fields = {f.name for f in dataclasses.fields(Spelling)}
    unknown = sorted(set(body) - fields - {"preset"})
    if unknown:
        raise SpellingError(f"{where}: unknown keys {unknown}; expected some of {sorted(fields)}")
    changes = {k: v for k, v in body.items() if k != "preset"}
    if "hostname_labels" in changes:
        changes["hostname_labels"] = tuple(changes["hostname_labels"])
    changes.setdefault("name", f"{base.name}+{Path(where).name}")
    spelling = dataclasses.replace(base, **changes)
    if spelling.gpu_util_unit not in UNITS:
        raise SpellingError(f"{where}: gpu_util_unit must be one of {UNITS}, got {spelling.gpu_util_unit!r}")
    for scale in ("sm_clock_per_mhz", "fb_per_mib"):
        v = getattr(spelling, scale)
        if not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
            raise SpellingError(f"{where}: {scale} must be a positive number, got {v!r}")
    return spelling


def util_unit(spelling: Spelling, samples: Iterable[tuple[str, float]]) -> str:
    """GPU_UTIL's unit over one query's samples (series description, value): `percent`, `ratio`, or ZERO.

    A value over 1 can only be a percentage; over 100 it is not a utilization at all. With every value in
    0..1 the data cannot tell a busy ratio from a nearly idle percentage, so the spelling must declare it;
    all zero is the same figure in both units. Raises SpellingError naming the series otherwise."""
    values = [(s, v) for s, v in samples if math.isfinite(v)]
    declared = spelling.gpu_util_unit
    if not values:
        return declared if declared != AUTO else ZERO
    top_series, top = max(values, key=lambda sv: sv[1])
    low_series, low = min(values, key=lambda sv: sv[1])
    if low < 0 or top > 100:
        bad, value = (low_series, low) if low < 0 else (top_series, top)
        raise SpellingError(
            f"{spelling.gpu_util} is not a utilization: {bad} = {value:g} (expected 0..100 percent or "
            "0..1 ratio); is the exporter spelling's gpu_util the right series?"
        )
    if top > 1:
        if declared == RATIO:
            raise SpellingError(
                f"{spelling.gpu_util} is declared a 0-1 ratio (spelling {spelling.name}) but {top_series} = "
                f"{top:g}: the data is in percent; set gpu_util_unit: percent (or auto) in the exporter spelling"
            )
        return PERCENT
    if top == 0:
        return ZERO
    if declared == AUTO:
        raise SpellingError(
            f"cannot tell {spelling.gpu_util}'s unit from the data: every value is within 0..1 (largest "
            f"{top_series} = {top:g}), which is a busy 0-1 ratio or a nearly idle percentage. Declare it: "
            "gpu_util_unit: ratio (or percent) in the exporter spelling (--exporter-spelling FILE)"
        )
    return declared


def as_percent(value: float, unit: str) -> float:
    """A GPU_UTIL value in percent, given the unit `util_unit` found."""
    return value * 100 if unit == RATIO else value


SPELLING_ENV = "GPU_FINOPS_EXPORTER_SPELLING"  # the --exporter-spelling every reader uses when not given
SPELLING_HELP = (
    "how the fleet's exporter spells the DCGM inputs: a preset ("
    + ", ".join(PRESETS)
    + f") or a YAML file of Spelling fields (docs/alerts.md; default: ${SPELLING_ENV} or {PINNED.name}, "
    "the pinned dcgm-exporter)"
)


def spelling_argument(text: str) -> Spelling:
    """argparse type of --exporter-spelling: a bad value is a usage error naming it (exit 2)."""
    import argparse

    try:
        return load_spelling(text)
    except SpellingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
