"""The dcgm-exporter metrics CSV: generated from a typed list and validated with the exporter's rules.

The exporter reads `field, prom type, help` rows: exactly three comma-separated fields, `#` starts a
comment, blank lines are ignored, the type is one the exporter knows. A comma inside the help text makes
a fourth field and the exporter exits at start, so a bad row must fail here, before it ships.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from facts import dcgm

# Prometheus types dcgm-exporter accepts in its CSV (counter and gauge for fields, label for labels).
KNOWN_PROM_TYPES = frozenset({"gauge", "counter", "label"})
_FIELD_NAME = re.compile(r"^DCGM_(FI|EXP)_[A-Z0-9_]+$")


class MetricsCsvError(ValueError):
    """A metrics CSV row the exporter would reject. Names the row and the reason."""

    def __init__(self, line_no: int, row: str, reason: str, source: str = "<csv>"):
        self.line_no, self.row, self.reason, self.source = line_no, row, reason, source
        super().__init__(f"{source}:{line_no}: {reason}: {row!r}")


@dataclass(frozen=True)
class MetricRow:
    """One exported DCGM field."""

    field: str
    prom_type: str
    help: str

    def line(self) -> str:
        return f"{self.field}, {self.prom_type}, {self.help}"


# The project's metrics: SM_ACTIVE and friends switched on (dcgm-exporter ships them commented out).
PROJECT_METRICS: tuple[MetricRow, ...] = (
    MetricRow(dcgm.SM_ACTIVE, "gauge", "Ratio of cycles an SM has at least 1 warp assigned."),
    MetricRow(
        dcgm.SM_OCCUPANCY,
        "gauge",
        "Ratio of number of warps resident to theoretical maximum warps per cycle.",
    ),
    MetricRow(dcgm.GR_ENGINE_ACTIVE, "gauge", "Ratio of time the graphics engine is active."),
    MetricRow(dcgm.PIPE_TENSOR_ACTIVE, "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    MetricRow(
        dcgm.DRAM_ACTIVE,
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
    ),
    MetricRow(dcgm.GPU_UTIL, "gauge", "GPU utilization (in %)."),
    MetricRow(dcgm.POWER_USAGE, "gauge", "Power draw (in W)."),
    MetricRow(dcgm.SM_CLOCK, "gauge", "SM clock frequency (in MHz)."),
    MetricRow(dcgm.FB_USED, "gauge", "Framebuffer memory used (in MiB)."),
    MetricRow(dcgm.FB_FREE, "gauge", "Framebuffer memory free (in MiB)."),
)

# dcgm-exporter's own default counters file leaves every DCGM_FI_PROF_* row commented out; this is
# the shape of it that matters to us (used by the local target to prove a collector notices).
EXPORTER_DEFAULT_METRICS: tuple[MetricRow, ...] = tuple(
    r for r in PROJECT_METRICS if not r.field.startswith("DCGM_FI_PROF_")
)


def validate_row(line_no: int, raw: str, source: str = "<csv>") -> MetricRow | None:
    """Parse one CSV line; None for comments and blank lines; MetricsCsvError for a bad row."""
    text = raw.strip()
    if not text or text.startswith("#"):
        return None
    fields = [f.strip() for f in text.split(",")]
    if len(fields) != 3:
        raise MetricsCsvError(
            line_no,
            raw,
            f"expected exactly 3 fields (field, prom type, help), found {len(fields)}"
            + (" - a comma in the help text splits it" if len(fields) > 3 else ""),
            source,
        )
    name, prom_type, help_text = fields
    if not _FIELD_NAME.match(name):
        raise MetricsCsvError(
            line_no, raw, f"field {name!r} is not a DCGM field name (DCGM_FI_* or DCGM_EXP_*)", source
        )
    if prom_type not in KNOWN_PROM_TYPES:
        raise MetricsCsvError(
            line_no, raw, f"unknown prom type {prom_type!r}; known: {sorted(KNOWN_PROM_TYPES)}", source
        )
    if not help_text:
        raise MetricsCsvError(line_no, raw, "empty help text", source)
    return MetricRow(name, prom_type, help_text)


def parse(text: str, source: str = "<csv>") -> list[MetricRow]:
    """Validate a whole CSV; raises on the first bad row or on a field listed twice."""
    rows: list[MetricRow] = []
    seen: dict[str, int] = {}
    for line_no, raw in enumerate(text.splitlines(), start=1):
        row = validate_row(line_no, raw, source)
        if row is None:
            continue
        if row.field in seen:
            raise MetricsCsvError(
                line_no, raw, f"field {row.field} already listed on line {seen[row.field]}", source
            )
        seen[row.field] = line_no
        rows.append(row)
    if not rows:
        raise MetricsCsvError(0, "", "no metric rows: the exporter would export nothing", source)
    return rows


def render(rows: Iterable[MetricRow] = PROJECT_METRICS) -> str:
    """Render rows to CSV text, then re-validate it, so a bad typed row fails synthesis naming the row."""
    rows = list(rows)
    header = "# Format\n# DCGM FIELD, Prometheus metric type, help message\n"
    text = header + "".join(r.line() + "\n" for r in rows)
    parse(text, source="generated metrics CSV")
    return text


def exported_fields(text: str) -> frozenset[str]:
    """The set of DCGM fields a (valid) CSV exports."""
    return frozenset(r.field for r in parse(text))
