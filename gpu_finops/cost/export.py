"""Write the FOCUS dataset as Parquet, partitioned by billing period, to a directory or an S3 prefix.

Layout (Hive style, so Athena, Glue, DuckDB and Spark read the partition column from the path):

    DEST/billing_period=2026-11/focus.parquet       the FOCUS rows of November 2026
    DEST/_unpriced/billing_period=2026-11/unpriced.parquet   intervals with no price, and why (x_Status)

Athena and Hive skip paths that start with `_`, so a table over DEST never reads the unpriced list.
Each export rewrites the whole partition of every billing period it covers (one file a partition), so
exporting again never double counts.

Money columns are Parquet DOUBLE holding values already on the micro-dollar quantum: any such value below
$10^9 survives the trip (the double nearest it reads back as the same six-decimal number), and the FOCUS
project's validator checks its "decimal" columns as floating point. Sum them as DECIMAL(18, 6) (cast each
value first, as the DuckDB report and docs/finops.md's Athena queries do) and the sums are exact.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from gpu_finops.cost.focus import (
    BOOL,
    FLOAT,
    FOCUS_VERSION,
    INT,
    MONEY,
    QUANTITY,
    TEXT,
    TIME,
    FocusDataset,
    columns,
    period_key,
)
from gpu_finops.cost.records import COLUMNS as RECORD_COLUMNS
from gpu_finops.cost.records import CostRecord
from gpu_finops.cost.s3_access import S3Prefix
from gpu_finops.facts.private_files import write_private

PARTITION = "billing_period"
DATA_FILE = "focus.parquet"
UNPRICED_DIR = "_unpriced"


def _arrow_type(kind: str):
    import pyarrow as pa

    return {
        MONEY: pa.float64(),
        QUANTITY: pa.float64(),
        FLOAT: pa.float64(),
        TIME: pa.timestamp("ms", tz="UTC"),
        TEXT: pa.string(),
        INT: pa.int64(),
        BOOL: pa.bool_(),
    }[kind]


def schema(version: str = FOCUS_VERSION):
    import pyarrow as pa

    return pa.schema([pa.field(name, _arrow_type(kind)) for name, kind in columns(version).items()])


def _plain(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value


def to_table(rows: Sequence[dict[str, Any]], version: str = FOCUS_VERSION):
    """FOCUS rows as an Arrow table in the version's column order (Decimal -> double, exactly on the quantum)."""
    import pyarrow as pa

    names = columns(version)
    return pa.Table.from_pylist([{c: _plain(r[c]) for c in names} for r in rows], schema=schema(version))


def _unpriced_table(records: Sequence[CostRecord]):
    import pyarrow as pa

    return pa.Table.from_pylist([{c: getattr(r, c) for c in RECORD_COLUMNS} for r in records])


def _parquet_bytes(table) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


@dataclass(frozen=True)
class Written:
    path: str  # file path or s3:// URL
    rows: int


class Destination:
    """A directory, or an S3 prefix written with boto3 (which honours AWS_ENDPOINT_URL)."""

    def __init__(self, dest: str, s3_client: Any = None):
        self.dest = dest.rstrip("/")
        self.s3 = S3Prefix.at(dest, s3_client) if dest.startswith("s3://") else None

    def put(self, relative: str, data: bytes) -> str:
        if self.s3 is not None:
            return self.s3.put(relative, data)
        path = Path(self.dest) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private(path, data)  # spend by tenant: 0600 from the start
        return str(path)


def _by_period(items: Iterable[Any], start_of) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for item in items:
        out.setdefault(period_key(start_of(item)), []).append(item)
    return dict(sorted(out.items()))


def write_dataset(dataset: FocusDataset, dest: str, *, s3_client: Any = None) -> list[Written]:
    """Write every billing period's partition (and the unpriced list beside it); return what was written."""
    from gpu_finops.cost.focus import parse_time

    target = Destination(dest, s3_client)
    written = []
    for key, rows in _by_period(dataset.rows, lambda r: r["BillingPeriodStart"]).items():
        rows.sort(key=lambda r: (r["ChargePeriodStart"], r["ResourceName"], r["x_Tenant"] or ""))
        path = target.put(f"{PARTITION}={key}/{DATA_FILE}", _parquet_bytes(to_table(rows, dataset.version)))
        written.append(Written(path, len(rows)))
    unpriced = _by_period(dataset.unpriced, lambda r: parse_time(r.ChargePeriodStart))
    for key, records in unpriced.items():
        path = target.put(
            f"{UNPRICED_DIR}/{PARTITION}={key}/unpriced.parquet", _parquet_bytes(_unpriced_table(records))
        )
        written.append(Written(path, len(records)))
    return written


def athena_ddl(
    location: str = "s3://BUCKET/PREFIX/", table: str = "gpu_finops_focus", version: str = FOCUS_VERSION
) -> str:
    """The Athena (Hive) DDL of the exported dataset: every column in order, partitioned by billing_period.
    Money is DOUBLE on the micro-dollar quantum; sum it as DECIMAL(18, 6) (see the module docstring)."""
    hive = {MONEY: "double", QUANTITY: "double", FLOAT: "double", TIME: "timestamp", TEXT: "string",
            INT: "bigint", BOOL: "boolean"}  # fmt: skip
    cols = ",\n".join(f"  `{name}` {hive[kind]}" for name, kind in columns(version).items())
    return (
        f"CREATE EXTERNAL TABLE {table} (\n{cols}\n)\n"
        f"PARTITIONED BY (`{PARTITION}` string)\n"
        "STORED AS PARQUET\n"
        f"LOCATION '{location}'\n"
        "TBLPROPERTIES (\n"
        "  'projection.enabled' = 'true',\n"
        f"  'projection.{PARTITION}.type' = 'date',\n"
        f"  'projection.{PARTITION}.format' = 'yyyy-MM',\n"
        f"  'projection.{PARTITION}.range' = '2026-01,NOW',\n"
        f"  'projection.{PARTITION}.interval' = '1',\n"
        f"  'projection.{PARTITION}.interval.unit' = 'MONTHS',\n"
        f"  'storage.location.template' = '{location.rstrip('/')}/{PARTITION}=${{{PARTITION}}}/'\n"
        ");"
    )
