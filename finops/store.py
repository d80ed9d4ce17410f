"""The cost table behind one interface: SQLite by default, DynamoDB on AWS. Upserts keyed by node and interval."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from facts.errors import UsageError
from finops.records import COLUMNS, KEY, CostRecord

_INT_COLUMNS = {"x_GpuCount", "x_GpusReporting"}
_BOOL_COLUMNS = {"x_RateStale"}
_TEXT_COLUMNS = {
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "RegionId",
    "AvailabilityZone",
    "PricingCategory",
    "PricingUnit",
    "x_InstanceType",
    "x_CapacityType",
    "x_NodePool",
    "x_RateSource",
    "x_Status",
    "x_Message",
}


class CostStore(Protocol):
    def upsert(self, records: Sequence[CostRecord]) -> int: ...

    def records(self, since: str | None = None, until: str | None = None) -> list[CostRecord]: ...


class SqliteCostStore:
    """A cost table in one SQLite file (in-cluster: on a volume)."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path)
        except (OSError, sqlite3.Error) as exc:
            where = getattr(exc, "filename", None)
            why = "exists and is not a directory" if isinstance(exc, FileExistsError) else exc
            why = getattr(why, "strerror", None) or why
            raise UsageError(
                f"cannot open the SQLite cost store {self.path}: {f'{where}: ' if where else ''}{why}; "
                "check the --store path"
            ) from exc
        cols = []
        for name in COLUMNS:
            kind = (
                "INTEGER"
                if name in _INT_COLUMNS | _BOOL_COLUMNS
                else "TEXT"
                if name in _TEXT_COLUMNS
                else "REAL"
            )
            cols.append(f'"{name}" {kind}')
        self.db.execute(
            f"CREATE TABLE IF NOT EXISTS cost_records ({', '.join(cols)}, PRIMARY KEY ({', '.join(KEY)}))"
        )
        self.db.commit()

    def upsert(self, records: Sequence[CostRecord]) -> int:
        if not records:
            return 0
        names = ", ".join(f'"{c}"' for c in COLUMNS)
        marks = ", ".join("?" for _ in COLUMNS)
        updates = ", ".join(f'"{c}"=excluded."{c}"' for c in COLUMNS if c not in KEY)
        sql = (
            f"INSERT INTO cost_records ({names}) VALUES ({marks}) "
            f"ON CONFLICT ({', '.join(KEY)}) DO UPDATE SET {updates}"
        )
        with self.db:
            self.db.executemany(sql, [r.row() for r in records])
        return len(records)

    def records(self, since: str | None = None, until: str | None = None) -> list[CostRecord]:
        sql = f"SELECT {', '.join(chr(34) + c + chr(34) for c in COLUMNS)} FROM cost_records WHERE 1=1"
        args: list[str] = []
        if since:
            sql += " AND ChargePeriodStart >= ?"
            args.append(since)
        if until:
            sql += " AND ChargePeriodStart < ?"
            args.append(until)
        sql += " ORDER BY ChargePeriodStart, ResourceName"
        out = []
        for row in self.db.execute(sql, args):
            data = dict(zip(COLUMNS, row, strict=True))
            data["x_RateStale"] = bool(data["x_RateStale"])
            out.append(CostRecord.from_dict(data))
        return out

    def close(self) -> None:
        self.db.close()


def _to_dynamo(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    return value


def _from_dynamo(name: str, value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if name in _INT_COLUMNS else float(value)
    return value


class DynamoCostStore:
    """The DynamoDB cost table the cluster stack creates (hash ResourceId, range ChargePeriodStart)."""

    def __init__(self, table_name: str, dynamodb_resource: Any):
        self.table = dynamodb_resource.Table(table_name)

    def upsert(self, records: Sequence[CostRecord]) -> int:
        # put_item replaces the item with the same key: an upsert, so a restart never double counts.
        with self.table.batch_writer(overwrite_by_pkeys=list(KEY)) as batch:
            for record in records:
                batch.put_item(Item={k: _to_dynamo(v) for k, v in record.to_dict().items()})
        return len(records)

    def records(self, since: str | None = None, until: str | None = None) -> list[CostRecord]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {}
        while True:
            page = self.table.scan(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        out = []
        for item in items:
            start = item["ChargePeriodStart"]
            if (since and start < since) or (until and start >= until):
                continue
            out.append(CostRecord.from_dict({k: _from_dynamo(k, v) for k, v in item.items()}))
        return sorted(out, key=lambda r: (r.ChargePeriodStart, r.ResourceName))


def open_store(spec: str, *, dynamodb_resource: Any = None) -> CostStore:
    """`sqlite:PATH` (default form: a bare path) or `dynamodb:TABLE`."""
    if spec.startswith("dynamodb:"):
        if dynamodb_resource is None:
            import boto3

            dynamodb_resource = boto3.resource("dynamodb")
        return DynamoCostStore(spec.split(":", 1)[1], dynamodb_resource)
    return SqliteCostStore(spec.removeprefix("sqlite:"))


def group_by_node(records: Iterable[CostRecord]) -> dict[str, list[CostRecord]]:
    out: dict[str, list[CostRecord]] = {}
    for record in records:
        out.setdefault(record.ResourceName, []).append(record)
    return out
