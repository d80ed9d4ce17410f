"""Both cost stores upsert by (ResourceId, ChargePeriodStart) and read back what they wrote."""

from __future__ import annotations

import pytest

from gpu_finops.cost.records import CostRecord
from gpu_finops.cost.store import DynamoCostStore, SqliteCostStore, StoreError
from tests.gpu_finops.cost.test_reaper import records


def _dynamo(boto_session):
    ddb = boto_session.resource("dynamodb")
    ddb.create_table(
        TableName="gpu-finops-cost",
        KeySchema=[
            {"AttributeName": "ResourceId", "KeyType": "HASH"},
            {"AttributeName": "ChargePeriodStart", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "ResourceId", "AttributeType": "S"},
            {"AttributeName": "ChargePeriodStart", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return DynamoCostStore("gpu-finops-cost", ddb)


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request, tmp_path):
    if request.param == "sqlite":
        return SqliteCostStore(tmp_path / "c.sqlite")
    return _dynamo(request.getfixturevalue("boto_session"))


def test_upsert_round_trip_keeps_nulls_and_never_duplicates(store):
    rows = records("n1", [0.5, None, 0.25])
    store.upsert(rows)
    store.upsert(rows[:2])  # a restart writes the same intervals again
    back = store.records()
    assert len(back) == 3
    assert [r.x_SmActive for r in back] == [0.5, None, 0.25]
    assert back[1].x_IdleCost is None and back[1].x_Status == "missing-sm-active"
    assert back[0] == rows[0]
    assert isinstance(back[0], CostRecord)


def test_range_filter(store):
    rows = records("n1", [0.5, 0.4, 0.3])
    store.upsert(rows)
    assert [r.ChargePeriodStart for r in store.records(since=rows[1].ChargePeriodStart)] == [
        rows[1].ChargePeriodStart,
        rows[2].ChargePeriodStart,
    ]


def test_a_new_sqlite_store_is_created_readable_by_its_owner_only(tmp_path, private_files_only):
    """sqlite3 creates its file with the umask's mode (0644 under 022): the store is made 0600 first,
    and its journal files copy that mode."""
    path = tmp_path / "new" / "cost.sqlite"
    s = SqliteCostStore(path)
    s.upsert(records("gpu-a", [0.5]))
    assert s.records()
    s.close()
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir() if p.stat().st_mode & 0o077] == []


def test_a_row_that_is_no_interval_is_refused_by_either_store_naming_it(store):
    rows = records("n1", [0.5])
    bad = CostRecord.from_dict({**rows[0].to_dict(), "ChargePeriodEnd": "2020-01-01T00:00:00Z"})
    store.upsert([bad])
    with pytest.raises(StoreError) as err:
        store.records()
    assert f"the record of n1 at {bad.ChargePeriodStart}: ChargePeriodEnd 2020-01-01T00:00:00Z is not after " \
           f"ChargePeriodStart {bad.ChargePeriodStart}" in str(err.value)  # fmt: skip
