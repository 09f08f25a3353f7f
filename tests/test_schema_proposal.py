"""Schemas from values are said, not guessed silently: `fp.infer_schema` shows what columns a
frame, an Arrow table or a file calls for, and why; `create_table(schema=frame)` creates
those same columns and logs them; an edited proposal creates the edited columns. Also: the
advice for a table that exists names ``exist_ok=True``."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import frameport as fp
from frameport import ID, Client, ConflictError


def pandas_read_frame() -> pd.DataFrame:
    """What `pd.read_csv` gives for a file pandas wrote: an integer column with nulls as
    float64, ISO dates as text."""
    return pd.DataFrame(
        {
            "age": [19.0, np.nan, 3.0],
            "joined": ["2024-01-05", None, "2024-02-01T10:30:00"],
            "score": [1.5, 2.0, np.nan],
            "name": ["Ada", "Grace", None],
            "count": [1, 2, 3],
        }
    )


EXPECTED = {
    "age": "integer",
    "joined": "datetime",
    "score": "float",
    "name": "string(255)",
    "count": "integer",
}


def column_types(table: fp.Table) -> dict[str, str]:
    columns = table.columns()
    return dict(zip(columns["key"], columns["type"], strict=True))


def test_infer_schema_proposes_integer_and_datetime_and_says_why() -> None:
    proposal = fp.infer_schema(pandas_read_frame())
    assert isinstance(proposal, fp.SchemaProposal)
    assert dict(proposal) == EXPECTED
    assert proposal.reasons["age"] == "whole numbers and nulls"
    shown = repr(proposal)
    assert shown == str(proposal)
    lines = {line.split()[0]: " ".join(line.split()) for line in shown.splitlines()[1:]}
    assert lines["age"].endswith("whole numbers and nulls → integer")
    assert "ISO dates as text and nulls → datetime" in lines["joined"]
    assert lines["score"].endswith("→ float")


def test_infer_schema_reads_files_and_arrow_tables_alike(tmp_path: Path) -> None:
    frame = pandas_read_frame()
    csv, ndjson, parquet = tmp_path / "p.csv", tmp_path / "p.ndjson", tmp_path / "p.parquet"
    frame.to_csv(csv, index=False)
    frame.to_json(ndjson, orient="records", lines=True)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet)
    arrow = pa.Table.from_pandas(frame, preserve_index=False)
    for source in (csv, str(ndjson), parquet, arrow):
        assert dict(fp.infer_schema(source)) == EXPECTED, source


def test_infer_schema_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    with pytest.raises(fp.LoadError, match="no file"):
        fp.infer_schema(tmp_path / "missing.csv")
    with pytest.raises(fp.LoadError, match="cannot load from a list: give a pandas"):
        fp.infer_schema([1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot be a column key"):
        fp.infer_schema(pd.DataFrame({"has space": [1]}))


def test_create_table_from_a_frame_uses_the_proposal_and_logs_it(
    client: Client, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = pandas_read_frame()
    with caplog.at_level(logging.INFO, logger="frameport"):
        table = client.create_table(ID.unique(), "people", schema=frame, progress=False)
    assert capsys.readouterr() == ("", "")
    told = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    said = [message for message in told if "people" in message and "age" in message]
    assert len(said) == 1, told
    assert "age whole numbers and nulls → integer" in " ".join(said[0].split())
    assert str(fp.infer_schema(frame)).split("\n", 1)[1] in said[0]
    assert column_types(table) == {key: name.split("(")[0] for key, name in EXPECTED.items()}
    report = table.load(frame, progress=False)
    assert report.ok and report.written == 3
    read = table.to_pandas().drop(columns="$id")
    assert read["age"].tolist() == [19, pd.NA, 3] and str(read["age"].dtype) == "Int64"
    assert read["joined"].tolist() == [
        pd.Timestamp("2024-01-05", tz="UTC"),
        pd.NaT,
        pd.Timestamp("2024-02-01T10:30:00", tz="UTC"),
    ]


def test_an_edited_proposal_creates_the_edited_columns(client: Client) -> None:
    frame = pandas_read_frame().assign(kind=pd.Categorical(["a", "b", "a"]))
    proposal = fp.infer_schema(frame)
    assert proposal["kind"] == "enum"
    proposal["age"] = "float"
    proposal["name"] = "string(40)"
    del proposal["count"]
    assert proposal.reasons["age"] == "set by hand"
    table = client.create_table(ID.unique(), "edited", schema=proposal, progress=False)
    types = column_types(table)
    assert types == {
        "age": "float",
        "joined": "datetime",
        "score": "float",
        "name": "string",
        "kind": "enum",
    }
    columns = table.columns(details=True).set_index("key")
    assert columns.loc["name", "size"] == 40
    assert list(columns["elements"]["kind"]) == ["a", "b"]
    with pytest.raises(ValueError, match="unknown type 'number'"):
        proposal["age"] = "number"
    with pytest.raises(ValueError, match="cannot be a column key"):
        proposal["has space"] = "integer"


def test_creating_a_table_that_exists_advises_exist_ok(client: Client) -> None:
    database = ID.unique()
    client.create_table(database, "t", schema={"n": "integer"}, progress=False)
    with pytest.raises(ConflictError) as caught:
        client.create_table(database, "t", schema={"n": "integer"}, progress=False)
    assert caught.value.hint is not None and "exist_ok=True" in caught.value.hint
    assert "exist_ok=True" in str(caught.value)
    kept = client.create_table(database, "t", schema={"n": "integer"}, exist_ok=True)
    assert column_types(kept) == {"n": "integer"}
