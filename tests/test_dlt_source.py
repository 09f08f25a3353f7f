"""The dlt source: each table loaded twice into dlt's duckdb destination, with changes
between the runs, equals the table; the key never shows in what the pipeline prints."""

from __future__ import annotations

import logging
from pathlib import Path

import dlt
import duckdb
import pandas as pd
import pytest

from frameport import Client
from frameport._demo import sample_people
from frameport.dlt import frameport_source
from frameport.local import LocalService
from tables_support import load, new_id


def _loaded(database: Path, dataset: str, table: str) -> pd.DataFrame:
    with duckdb.connect(str(database)) as connection:
        frame: pd.DataFrame = connection.sql(f'SELECT * FROM "{dataset}"."{table}"').df()
        return frame


def test_two_loads_with_changes_between_equal_the_table(
    service: LocalService,
    client: Client,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DLT_DATA_DIR", str(tmp_path / "dlt"))
    monkeypatch.setenv("SOURCES__FRAMEPORT__KEY", service.key)  # the key from dlt's secrets
    caplog.set_level(logging.DEBUG)
    table, frame = load(client, new_id("dlt"), sample_people(900, seed=41))
    database = tmp_path / "warehouse.duckdb"
    pipeline = dlt.pipeline(
        "frameport_test", destination=dlt.destinations.duckdb(str(database)),
        dataset_name="crm", pipelines_dir=str(tmp_path / "pipelines"),
    )  # fmt: skip

    def run() -> None:
        source = frameport_source(
            table.database_id, [table.id], endpoint=service.endpoint, project=service.project,
            page_size=250,
        )  # fmt: skip
        info = pipeline.run(source)
        print(info)
        assert not info.has_failed_jobs

    run()
    changed = list(frame["$id"][:30])
    table.upsert(pd.DataFrame({"$id": changed, "name": ["changed"] * 30}), progress=False)
    table.insert(sample_people(12, seed=42), progress=False)
    run()

    loaded = _loaded(database, "crm", table.id.replace("-", "_"))
    expected = table.to_pandas(progress=False)
    key = next(c for c in loaded.columns if c.endswith("id") and "dlt" not in c)
    assert sorted(loaded[key]) == sorted(expected["$id"])
    by_id = loaded.set_index(key).loc[expected["$id"]]
    assert list(by_id["name"]) == list(expected["name"])
    assert list(by_id["age"].astype("Int64")) == list(expected["age"])
    output = capsys.readouterr()
    assert service.key not in output.out + output.err + caplog.text
