"""Cost by tenant from the exported FOCUS Parquet, read with DuckDB: cost, idle cost, idle share, GPU-hours.

DuckDB reads the Hive-partitioned files in place (a directory); an s3:// prefix is copied to a temporary
directory with boto3 first, so no DuckDB extension has to be downloaded. Money is summed as
DECIMAL(18, 6), so the totals are exact.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from gpu_finops.cost.export import DATA_FILE, PARTITION
from gpu_finops.cost.s3_access import S3Prefix
from gpu_finops.facts.errors import UsageError, excerpt, printable

TENANT_SQL = f"""
SELECT
  x_Tenant AS tenant,
  SUM(CAST(EffectiveCost AS DECIMAL(18, 6))) AS cost,
  SUM(CAST(x_IdleCost AS DECIMAL(18, 6))) AS idle_cost,
  SUM(CASE WHEN x_IdleCost IS NOT NULL THEN CAST(EffectiveCost AS DECIMAL(18, 6)) END) AS measured_cost,
  SUM(x_GpuSeconds) / 3600 AS gpu_hours,
  COUNT(DISTINCT ResourceName) AS nodes
FROM read_parquet($files, hive_partitioning = true)
WHERE $period IS NULL OR {PARTITION} = $period
GROUP BY x_Tenant
ORDER BY cost DESC, tenant
"""
GAPS = ("with no x_Tenant", "with no EffectiveCost", "with no finite EffectiveCost",
        "with no finite x_GpuSeconds", "with an x_IdleCost that is not finite")  # fmt: skip
GAPS_SQL = f"""
SELECT
  COUNT(*) FILTER (WHERE x_Tenant IS NULL),
  COUNT(*) FILTER (WHERE EffectiveCost IS NULL),
  COUNT(*) FILTER (WHERE isnan(CAST(EffectiveCost AS DOUBLE)) OR isinf(CAST(EffectiveCost AS DOUBLE))),
  COUNT(*) FILTER (WHERE x_GpuSeconds IS NULL OR isnan(CAST(x_GpuSeconds AS DOUBLE))
                   OR isinf(CAST(x_GpuSeconds AS DOUBLE))),
  COUNT(*) FILTER (WHERE isnan(CAST(x_IdleCost AS DOUBLE)) OR isinf(CAST(x_IdleCost AS DOUBLE)))
FROM read_parquet($files, hive_partitioning = true)
WHERE $period IS NULL OR {PARTITION} = $period
"""


@dataclass(frozen=True)
class TenantSummary:
    tenant: str
    cost: Decimal
    idle_cost: Decimal | None  # over the intervals whose SM_ACTIVE was measured
    measured_cost: Decimal | None
    gpu_hours: float
    nodes: int

    @property
    def idle_share(self) -> float | None:
        if self.idle_cost is None or not self.measured_cost:
            return None
        return float(self.idle_cost / self.measured_cost)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "cost": str(self.cost),
            "idle_cost": None if self.idle_cost is None else str(self.idle_cost),
            "idle_share": self.idle_share,
            "gpu_hours": self.gpu_hours,
            "nodes": self.nodes,
        }


def _refuse_gaps(source: str, gaps: Sequence[int]) -> None:
    missing = [f"{n} row(s) {what}" for n, what in zip(gaps, GAPS, strict=True) if n]
    if missing:  # missing data is an error, never a 0 GPU-hours nor a 'nan' printed as a figure
        raise UsageError(f"--parquet {excerpt(source)}: {'; '.join(missing)}: not the FOCUS export `cost export` "
                         "writes (it writes every tenant, cost and GPU-second); export again or name its folder")  # fmt: skip


def by_tenant(source: str, *, period: str | None = None, s3_client: Any = None) -> list[TenantSummary]:
    """Tenants' totals over the dataset at `source` (a directory or s3:// prefix), optionally one period.
    A source that is missing, not a folder, without partitions, or whose files are not the export's
    Parquet is a UsageError naming it."""
    import duckdb

    with tempfile.TemporaryDirectory(prefix="gpu-finops-focus-") as tmp:
        if source.startswith("s3://"):
            root = S3Prefix.at(source, s3_client).copy_to(Path(tmp), f"{PARTITION}=")
        else:
            root = Path(source)
            if not root.is_dir():
                what = "does not exist" if not root.exists() else "is not a directory"
                raise UsageError(f"--parquet {excerpt(source)} {what}: name the folder `cost export` wrote")
        found = sorted(root.glob(f"{PARTITION}=*/{DATA_FILE}"))
        special = next((p for p in found if not p.is_file()), None)
        if special is not None:  # DuckDB would wait on a FIFO for ever
            raise UsageError(f"--parquet {excerpt(source)}: {special} is not a regular file (a FIFO, device or "
                             "directory); name the folder `cost export` wrote")  # fmt: skip
        files = [str(p) for p in found]
        if not files:
            raise UsageError(
                f"--parquet {excerpt(source)}: no FOCUS partitions ({PARTITION}=YYYY-MM/{DATA_FILE}) under it; "
                "name the folder `cost export` wrote"
            )
        try:
            with duckdb.connect() as db:
                gaps = db.execute(GAPS_SQL, {"files": files, "period": period}).fetchone()
                _refuse_gaps(source, gaps)
                rows = db.execute(TENANT_SQL, {"files": files, "period": period}).fetchall()
        except duckdb.Error as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UsageError(
                f"--parquet {excerpt(source)}: not the FOCUS export `cost export` writes: {excerpt(first, 160)}"
            ) from None
    return [
        TenantSummary(t, cost, idle, measured, float(hours), nodes)
        for t, cost, idle, measured, hours, nodes in rows
    ]


def tenant_table(summaries: Sequence[TenantSummary]) -> Table:
    t = Table(title="GPU cost per tenant (FOCUS export)")
    for col in ("tenant", "nodes", "GPU-hours", "cost $", "idle $", "idle share"):
        t.add_column(col, justify="left" if col == "tenant" else "right")
    for s in summaries:
        t.add_row(
            Text(printable(s.tenant)),  # a name from a file: neither rich markup nor terminal escapes
            str(s.nodes),
            f"{s.gpu_hours:.4f}",
            f"{s.cost:.6f}",
            "—" if s.idle_cost is None else f"{s.idle_cost:.6f}",
            "—" if s.idle_share is None else f"{s.idle_share * 100:.1f} %",
        )
    total = sum((s.cost for s in summaries), Decimal(0))
    t.add_row("total", "", f"{sum(s.gpu_hours for s in summaries):.4f}", f"{total:.6f}", "", "")
    return t


def tenant_panel(ax: Any, summaries: Sequence[TenantSummary]) -> None:
    """Stacked bars per tenant: dollars that bought computation, idle dollars, and dollars whose
    SM_ACTIVE was not measured (neither, so not drawn as either)."""
    names = [printable(s.tenant) for s in summaries]
    idle = [float(s.idle_cost or 0) for s in summaries]
    busy = [float(s.measured_cost or 0) - i for s, i in zip(summaries, idle, strict=True)]
    unmeasured = [float(s.cost - (s.measured_cost or 0)) for s in summaries]
    ax.bar(names, busy, label="bought computation", color="tab:green")
    ax.bar(names, idle, bottom=busy, label="idle: cost x (1 - SM_ACTIVE)", color="tab:red", alpha=0.7)
    ax.bar(names, unmeasured, bottom=[b + i for b, i in zip(busy, idle, strict=True)],
           label="SM_ACTIVE not measured", color="tab:gray", alpha=0.5)  # fmt: skip
    for x, s in enumerate(summaries):
        share = "" if s.idle_share is None else f" ({s.idle_share * 100:.0f} % idle)"
        ax.annotate(f"${s.cost:.4f}{share}\n{s.gpu_hours:.2f} GPU-h", (x, float(s.cost)), ha="center", va="bottom", fontsize="small")  # fmt: skip
    ax.margins(y=0.25)
    ax.set_ylabel("$ per tenant")
    ax.set_title("Per tenant: cost split by GPU-seconds held, and how much of it idled")
    ax.legend(fontsize="small")
