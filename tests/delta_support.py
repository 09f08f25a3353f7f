"""Helpers of the Delta sync tests: compare a synced Delta table with a fresh export."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable

from frameport import TableQuery


def by_id(table: pa.Table) -> pa.Table:
    return table.sort_by("$id")


def delta_types(schema: pa.Schema) -> pa.Schema:
    """`schema` with timestamps in microseconds, as Delta stores them."""
    fields = []
    for field in schema:
        kind = field.type
        if pa.types.is_timestamp(kind):
            kind = pa.timestamp("us", tz="UTC")
        fields.append(field.with_type(kind))
    return pa.schema(fields)


def assert_synced(target: Path, query: TableQuery, scratch: Path) -> None:
    """The Delta table at `target` holds exactly the rows of a fresh export of `query`,
    compared by `$id`: the same columns (every `$` field: a sync keeps them all), types
    (timestamps in µs) and values."""
    fresh = scratch / "fresh.parquet"
    query.to_parquet(fresh, progress=False, system=True)
    exported = pq.read_table(fresh)
    synced = DeltaTable(str(target)).to_pyarrow_table()
    assert synced.schema.names == exported.schema.names
    expected = by_id(exported.cast(delta_types(exported.schema)))
    actual = by_id(synced).cast(expected.schema)  # nullability aside, the types are equal
    assert [f.type for f in synced.schema] == [f.type for f in expected.schema]
    assert actual.equals(expected)
    fresh.unlink()


def assert_no_secret(target: Path, secrets: list[str]) -> None:
    """No file of the Delta log at `target` holds any of `secrets`."""
    for entry in (target / "_delta_log").iterdir():
        text = entry.read_text(errors="replace")
        assert not [secret for secret in secrets if secret in text], entry.name
