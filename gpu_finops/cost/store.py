"""The cost table behind one interface: SQLite by default, DynamoDB on AWS. Upserts keyed by node and interval.

Beside each cost record the store keeps who held the node's GPUs in that interval
(gpu_finops.cost.holdings_record.IntervalHoldings), written in the same upsert. SQLite: the table `gpu_holdings`,
added by schema version 2 (`PRAGMA user_version`; a version-1 file, cost_records alone, is migrated in
place when opened); version 3 adds the column x_GpuUtilUnit, version 4 each figure's provenance
(x_GpusReportingGpuUtil, x_GpusReportingSmActive, x_GpuUtilSeries, x_SmActiveSeries); older rows read them as NULL. DynamoDB: the attributes `x_Holdings` (JSON) and `x_HoldingsSource` on the cost item
itself, so a record and its holdings are one put and the table's keys are unchanged.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Sequence
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from gpu_finops.cost.holdings_record import IntervalHoldings
from gpu_finops.cost.records import COLUMNS, KEY, CostRecord, column_problem, record_problem
from gpu_finops.facts import input_files, timestamps
from gpu_finops.facts.errors import ConfigError, UsageError, excerpt
from gpu_finops.facts.private_files import create_private, refuse_unless_regular

SCHEMA_VERSION = (
    4  # 1: cost_records; 2: + gpu_holdings; 3: + cost_records.x_GpuUtilUnit; 4: + each figure's provenance
)
_HOLDINGS_DDL = (
    "CREATE TABLE IF NOT EXISTS gpu_holdings (ResourceName TEXT NOT NULL, ResourceId TEXT NOT NULL, "
    "ChargePeriodStart TEXT NOT NULL, ChargePeriodEnd TEXT NOT NULL, source TEXT NOT NULL, "
    "recorded_at TEXT NOT NULL, holdings TEXT NOT NULL, PRIMARY KEY (ResourceName, ChargePeriodStart))"
)
_HOLDINGS_COLUMNS = ("ResourceName", "ResourceId", "ChargePeriodStart", "ChargePeriodEnd", "source",
                     "recorded_at", "holdings")  # fmt: skip


class StoreVersionError(UsageError):
    pass


class StoreError(UsageError):
    """A store whose rows are not what gpu-finops writes (exit 2, naming the file, the row and the column)."""


_INT_COLUMNS = {"x_GpuCount", "x_GpusReporting", "x_GpusReportingGpuUtil", "x_GpusReportingSmActive"}
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
    "x_GpuUtilUnit",
    "x_GpuUtilSeries",
    "x_SmActiveSeries",
}


class CostStore(Protocol):
    def upsert(self, records: Sequence[CostRecord], holdings: Sequence[IntervalHoldings] = ()) -> int: ...

    def records(
        self, since: str | datetime | None = None, until: str | datetime | None = None
    ) -> list[CostRecord]: ...

    def holdings(
        self, since: str | datetime | None = None, until: str | datetime | None = None
    ) -> dict[tuple[str, str], IntervalHoldings]: ...


class SqliteCostStore:
    """A cost table in one SQLite file (in-cluster: on a volume)."""

    def __init__(self, path: str | Path, *, read_only: bool = False):
        self.path = str(path)
        self.read_only = read_only
        if read_only:
            self.db = _open_read_only(self.path)
            self._check_version()
            return
        try:
            if self.path != ":memory:":
                refuse_unless_regular(Path(self.path))  # never through a symlink, never a FIFO (F18)
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                # sqlite3 would create it with the umask's mode (world-readable); a 0600 empty file is
                # an empty database, and SQLite gives its journal and WAL files the same mode.
                create_private(Path(self.path))
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
        self._check_version()
        with self.db:
            self.db.execute(
                f"CREATE TABLE IF NOT EXISTS cost_records ({', '.join(cols)}, PRIMARY KEY ({', '.join(KEY)}))"
            )
            self.db.execute(_HOLDINGS_DDL)  # the migration from version 1 (and 0: a new file)
            present = {row[1] for row in self.db.execute("PRAGMA table_info(cost_records)")}
            for name, col in zip(COLUMNS, cols, strict=True):
                if (
                    name not in present
                ):  # the migrations to versions 3 and 4: columns added since the file was made
                    self.db.execute(f"ALTER TABLE cost_records ADD COLUMN {col}")
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _check_version(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreVersionError(
                f"{self.path}: cost store schema version {version}, this gpu-finops knows up to "
                f"{SCHEMA_VERSION}: use the gpu-finops that wrote it, or a newer one"
            )

    @property
    def schema_version(self) -> int:
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def upsert(self, records: Sequence[CostRecord], holdings: Sequence[IntervalHoldings] = ()) -> int:
        """Records and their intervals' holdings, in one transaction."""
        names = ", ".join(f'"{c}"' for c in COLUMNS)
        marks = ", ".join("?" for _ in COLUMNS)
        updates = ", ".join(f'"{c}"=excluded."{c}"' for c in COLUMNS if c not in KEY)
        sql = (
            f"INSERT INTO cost_records ({names}) VALUES ({marks}) "
            f"ON CONFLICT ({', '.join(KEY)}) DO UPDATE SET {updates}"
        )
        held = [(h.node, h.resource_id, h.start, h.end, h.source, h.recorded_at, h.holdings_json())
                for h in holdings]  # fmt: skip
        held_sql = (
            f"INSERT OR REPLACE INTO gpu_holdings ({', '.join(_HOLDINGS_COLUMNS)}) "
            f"VALUES ({', '.join('?' for _ in _HOLDINGS_COLUMNS)})"
        )
        with self.db:
            self.db.executemany(sql, [r.row() for r in records])
            self.db.executemany(held_sql, held)
        return len(records)

    def records(
        self, since: str | datetime | None = None, until: str | datetime | None = None
    ) -> list[CostRecord]:
        # a store opened read-only may predate a column (x_GpuUtilUnit, version 3; the provenance, 4): None
        present = {row[1] for row in self.db.execute("PRAGMA table_info(cost_records)")}
        names = [c for c in COLUMNS if c in present]
        columns = ", ".join(chr(34) + c + chr(34) for c in names)
        out = []
        for row in self._in_window("cost_records", columns, since, until, "ChargePeriodStart, ResourceName"):
            data = dict(zip(names, row, strict=True))
            for name, value in data.items():
                if problem := column_problem(name, value):
                    raise self._bad_row(data, problem)
            if problem := record_problem(data):
                raise self._bad_row(data, problem)
            data["x_RateStale"] = bool(data["x_RateStale"])
            out.append(CostRecord.from_dict(data))
        return out

    def _bad_row(self, data: dict[str, Any], problem: str) -> StoreError:
        return StoreError(f"{self.path}: the record of {excerpt(data.get('ResourceName'), 60)} at "
                          f"{excerpt(data.get('ChargePeriodStart'), 40)}: {excerpt(problem, 160)}; "
                          "is this a gpu-finops cost store? (`gpu-finops collect` writes one)")  # fmt: skip

    def holdings(
        self, since: str | datetime | None = None, until: str | datetime | None = None
    ) -> dict[tuple[str, str], IntervalHoldings]:
        """The recorded holdings by (ResourceName, ChargePeriodStart); a cell that is not a holdings list
        as the collector writes it (gpu_finops/cost/gpu_holdings.py's HoldingsFile) is refused naming the row."""
        out: dict[tuple[str, str], IntervalHoldings] = {}
        if not self._has_table("gpu_holdings"):
            return out  # a version-1 store opened read-only: no holdings were recorded
        for row in self._in_window("gpu_holdings", ", ".join(_HOLDINGS_COLUMNS), since, until):
            try:
                h = IntervalHoldings.from_parts(*row)
            except (ConfigError, ValueError, TypeError) as exc:
                why = exc.problem if isinstance(exc, ConfigError) else str(exc)
                raise StoreError(f"{self.path}: the holdings of {excerpt(row[0], 60)} at {excerpt(row[2], 40)}: "
                                 f"{excerpt(why, 160)}; is this a gpu-finops cost store?") from None  # fmt: skip
            out[h.key] = h
        return out

    def _has_table(self, name: str) -> bool:
        found = self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return found.fetchone() is not None

    def _in_window(
        self,
        table: str,
        columns: str,
        since: str | datetime | None,
        until: str | datetime | None,
        order: str | None = None,
    ) -> sqlite3.Cursor:
        """The rows of `table` whose interval starts in [since, until): the one time-window query."""
        sql = f"SELECT {columns} FROM {table} WHERE 1=1"
        args: list[str] = []
        since, until = _bound(since), _bound(until)
        if since:
            sql += " AND ChargePeriodStart >= ?"
            args.append(since)
        if until:
            sql += " AND ChargePeriodStart < ?"
            args.append(until)
        if order:
            sql += f" ORDER BY {order}"
        return self.db.execute(sql, args)

    def close(self) -> None:
        self.db.close()


def _is_wal(path: Path) -> bool:
    """SQLite's header says WAL mode (read and write versions 2, bytes 18-19)."""
    head = input_files.read_head(path, "cost store", 20)
    return len(head) == 20 and head.startswith(b"SQLite format 3\0") and head[18:20] == b"\x02\x02"


def _connect_without_writing(path: Path) -> sqlite3.Connection:
    """A connection that writes nothing beside the store. `mode=ro` alone still creates a
    WAL store's `-wal` and `-shm` files. So a WAL store with no `-wal` (nothing uncommitted) opens
    `immutable` (no locks, no shared memory); one with both opens `mode=ro` (nothing to create); one with a
    `-wal` and no `-shm` is copied, with its `-wal`, into a temporary folder and read into memory from there."""
    uri = path.resolve().as_uri()
    wal, shm = (Path(f"{path}{suffix}") for suffix in ("-wal", "-shm"))
    if not _is_wal(path) or (wal.exists() and shm.exists()):
        return sqlite3.connect(f"{uri}?mode=ro", uri=True)
    if not wal.exists():
        return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True)
    with tempfile.TemporaryDirectory(prefix="gpu-finops-store-") as tmp:
        copy = Path(tmp) / "store.db"
        shutil.copyfile(path, copy)
        shutil.copyfile(wal, f"{copy}-wal")
        src = sqlite3.connect(copy)
        try:
            mem = sqlite3.connect(":memory:")
            src.backup(mem)
        finally:
            src.close()
    return mem


def _open_read_only(path: str) -> sqlite3.Connection:
    """A cost store opened for reading only (`mode=ro`: SQLite itself refuses every write, and creates
    nothing): a missing file, a file that is not SQLite, and another program's SQLite file (no
    cost_records table) are UsageErrors naming the path, and the file is left as it was."""
    if not Path(path).is_file():
        what = "does not exist" if not Path(path).exists() else "is not a file"
        raise UsageError(
            f"the SQLite cost store {path} {what}: a report never creates one; check the --store path "
            "or run `gpu-finops collect` first"
        )
    try:
        db = _connect_without_writing(Path(path))
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise UsageError(
            f"the SQLite cost store {path} cannot be read: {exc}; check the --store path"
        ) from None
    if "cost_records" not in tables:
        db.close()
        raise UsageError(
            f"{path} is not a gpu-finops cost store (no cost_records table; found "
            f"{excerpt(sorted(tables)) if tables else 'no tables'}): check the --store path; it was not changed"
        )
    return db


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


def _bound(value: str | datetime | None) -> str | None:
    """A window bound as the key format (UTC, `Z`), so the keys' order is the times' order: a bound given
    with another offset (+05:00) compares as the time it is, not as its text."""
    if not value:
        return None
    t = timestamps.parse(value)
    if t.tzinfo is None:
        raise UsageError(f"{excerpt(value)!r}: a time without a zone; give one, like 2026-11-01T00:00:00Z")
    return timestamps.iso(t)


def _starts_in(start: str, since: str | datetime | None, until: str | datetime | None) -> bool:
    """The window test of SqliteCostStore._in_window, for a table scanned whole (DynamoDB)."""
    since, until = _bound(since), _bound(until)
    return not (since and start < since) and not (until and start >= until)


_HOLDINGS_ATTR, _SOURCE_ATTR, _RECORDED_ATTR = "x_Holdings", "x_HoldingsSource", "x_HoldingsRecordedAt"


class DynamoCostStore:
    """The DynamoDB cost table the cluster stack creates (hash ResourceId, range ChargePeriodStart)."""

    def __init__(self, table_name: str, dynamodb_resource: Any):
        self.table = dynamodb_resource.Table(table_name)

    def upsert(self, records: Sequence[CostRecord], holdings: Sequence[IntervalHoldings] = ()) -> int:
        # put_item replaces the item with the same key: an upsert, so a restart never double counts.
        held = {(h.resource_id, h.start): h for h in holdings}
        with self.table.batch_writer(overwrite_by_pkeys=list(KEY)) as batch:
            for record in records:
                item = {k: _to_dynamo(v) for k, v in record.to_dict().items()}
                h = held.pop((record.ResourceId, record.ChargePeriodStart), None)
                if h is not None:
                    item |= {_HOLDINGS_ATTR: h.holdings_json(), _SOURCE_ATTR: h.source,
                             _RECORDED_ATTR: h.recorded_at}  # fmt: skip
                batch.put_item(Item=item)
        if held:
            raise ValueError(
                f"holdings for {sorted(held)} have no cost record in this upsert: on DynamoDB they are "
                "attributes of the record's item, so write them with it"
            )
        return len(records)

    def _items(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {}
        while True:
            page = self.table.scan(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def holdings(
        self, since: str | datetime | None = None, until: str | datetime | None = None
    ) -> dict[tuple[str, str], IntervalHoldings]:
        out = {}
        for item in self._items():
            start = item["ChargePeriodStart"]
            if _HOLDINGS_ATTR not in item or not _starts_in(start, since, until):
                continue
            h = IntervalHoldings.from_parts(
                item["ResourceName"], item["ResourceId"], start, item["ChargePeriodEnd"],
                item[_SOURCE_ATTR], item[_RECORDED_ATTR], item[_HOLDINGS_ATTR],
            )  # fmt: skip
            out[h.key] = h
        return out

    def records(
        self, since: str | datetime | None = None, until: str | datetime | None = None
    ) -> list[CostRecord]:
        out = []
        for item in self._items():
            start = item["ChargePeriodStart"]
            if not _starts_in(start, since, until):
                continue
            data = {k: _from_dynamo(k, v) for k, v in item.items()}
            problem = next(filter(None, (column_problem(c, data.get(c)) for c in COLUMNS)), None)
            if problem := problem or record_problem(data):  # the rows' rules, as the SQLite store's
                raise StoreError(f"DynamoDB table {self.table.name}: the record of {excerpt(data.get('ResourceName'), 60)} "
                                 f"at {excerpt(start, 40)}: {excerpt(problem, 160)}; is this a gpu-finops cost "
                                 "table? (`gpu-finops collect` writes one)")  # fmt: skip
            out.append(CostRecord.from_dict(data))
        return sorted(out, key=lambda r: (r.ChargePeriodStart, r.ResourceName))


def open_store(spec: str, *, dynamodb_resource: Any = None, read_only: bool = False) -> CostStore:
    """`sqlite:PATH` (default form: a bare path) or `dynamodb:TABLE`. `read_only`: for reports, which
    must never create or change a store (DynamoDB is only ever read by them)."""
    if spec.startswith("dynamodb:"):
        table = spec.split(":", 1)[1]
        if not re.fullmatch(r"[A-Za-z0-9_.-]{3,255}", table):  # DynamoDB's own rule for a table name
            raise UsageError(
                f"--store {excerpt(spec, 80)}: {table[:80]!r} is not a DynamoDB table name (3-255 of letters, "
                "digits, '_', '-', '.')"
            )
        if dynamodb_resource is None:
            import boto3

            dynamodb_resource = boto3.resource("dynamodb")
        return DynamoCostStore(spec.split(":", 1)[1], dynamodb_resource)
    return SqliteCostStore(spec.removeprefix("sqlite:"), read_only=read_only)


def group_by_node(records: Iterable[CostRecord]) -> dict[str, list[CostRecord]]:
    out: dict[str, list[CostRecord]] = {}
    for record in records:
        out.setdefault(record.ResourceName, []).append(record)
    return out
