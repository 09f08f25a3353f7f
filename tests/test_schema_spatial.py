"""bigint, point, line and polygon columns round-trip through the service and the client
(DataFrame → table → DataFrame, values and dtypes); a column of a type the client does not
map (a relationship) reads as its JSON text with one warning naming it, never dropped."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import httpx
import pandas as pd
import pyarrow as pa
import pytest

from frameport import Client
from frameport._schema import UnmappedColumnWarning, type_reads_markdown
from frameport.local import LocalService
from tables_support import new_id

POINT = pa.list_(pa.float64())
FRAME = pd.DataFrame(
    {
        "$id": ["a", "b", "c"],
        "big": pd.array([2**62 + 1, -(2**63), None], dtype="Int64"),
        "where": [[10.5, 59.9], [0.0, -1.25], None],
        "path": [[[0.0, 0.0], [1.0, 1.0]], None, [[2.0, 3.0], [4.0, 5.0], [6.0, 7.5]]],
        "area": [None, [[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]], None],
    }
)
SCHEMA = {"big": "bigint", "where": "point", "path": "line", "area": "polygon"}


def test_new_types_round_trip_with_stable_types(key_client: Client) -> None:
    table = key_client.create_table(new_id("geo"), "shapes", schema=SCHEMA)
    table.insert(FRAME)
    arrow = table.to_arrow(progress=False)
    assert arrow.schema.field("big").type == pa.int64()
    assert arrow.schema.field("where").type == POINT
    assert arrow.schema.field("path").type == pa.list_(POINT)
    assert arrow.schema.field("area").type == pa.list_(pa.list_(POINT))
    read = table.to_pandas(progress=False).set_index("$id").loc[["a", "b", "c"]]
    assert str(read["big"].dtype) == "Int64"
    assert read["big"].tolist()[:2] == [2**62 + 1, -(2**63)] and read["big"].isna().tolist()[2]
    for column in ("where", "path", "area"):
        assert read[column].dtype == object
        assert read[column].tolist() == FRAME.set_index("$id")[column].tolist()


def test_geometry_columns_cannot_be_arrays(key_client: Client) -> None:
    with pytest.raises(ValueError, match="cannot be arrays"):
        key_client.create_table(new_id("geo"), "bad", schema={"p": "point[]"})


def test_a_relationship_column_reads_as_json_text_with_one_warning(
    key_client: Client, service: LocalService
) -> None:
    database = new_id("rel")
    authors = key_client.create_table(database, "authors", schema={"name": "string"})
    books = key_client.create_table(database, "books", schema={"title": "string"})
    headers = {"X-Service-Project": service.project, "X-Service-Key": service.key}
    with httpx.Client(base_url=service.endpoint, headers=headers) as raw:
        response = raw.post(
            f"/tablesdb/{database}/tables/books/columns/relationship",
            json={"key": "author", "relatedTableId": "authors", "type": "manyToOne"},
        )
        assert response.status_code == 202, response.text
        column = f"/tablesdb/{database}/tables/books/columns/author"
        deadline = time.monotonic() + 10  # new columns are `processing` first: poll, as asked
        while raw.get(column).json()["status"] != "available":
            assert time.monotonic() < deadline
            time.sleep(0.02)
    authors.insert(pd.DataFrame({"$id": ["ann"], "name": ["Ann"]}))
    books.insert(pd.DataFrame({"$id": ["b1", "b2"], "title": ["One", "Two"]}))
    with httpx.Client(base_url=service.endpoint, headers=headers) as raw:
        path = f"/tablesdb/{database}/tables/books/rows/b1"
        assert raw.patch(path, json={"data": {"author": "ann"}}).status_code == 200
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read = books.to_pandas(progress=False).set_index("$id").loc[["b1", "b2"]]
    unmapped = [w for w in caught if issubclass(w.category, UnmappedColumnWarning)]
    assert len(unmapped) == 1 and "'author' (relationship)" in str(unmapped[0].message)
    first, second = read["author"].tolist()
    assert json.loads(str(first)) == "ann"
    assert second is None or second != second  # null


def test_the_dtype_page_publishes_how_the_new_types_read() -> None:
    page = Path(__file__).resolve().parents[1] / "docs" / "reference" / "dtypes.md"
    assert "<!-- generated: type-reads -->" in page.read_text(encoding="utf-8")
    assert "| `point` | `list<item: double>` | `object` |" in type_reads_markdown()
