"""The ``frameport://`` fsspec filesystem against the local service: found through fsspec's
entry point, listing, info, ranged reads (bytes counted by the filesystem), writes and deletes.
pandas and pyarrow reading the same bytes locally are the oracles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from frameport import ID, Bucket, Client
from frameport._fsspec import FrameportFileSystem
from frameport.local import LocalService

COLUMNS = 6


@pytest.fixture(scope="module")
def bucket(key_client: Client) -> Bucket:
    return key_client.create_bucket(f"fs-{ID.unique()}", "fsspec tests")


@pytest.fixture(scope="module")
def options(service: LocalService) -> dict[str, Any]:
    return {"endpoint": service.endpoint, "project": service.project, "key": service.key}


@pytest.fixture(scope="module")
def parquet_file(bucket: Bucket, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Parquet file of six float columns in four row groups (about 12 MB), uploaded as
    ``data/wide.parquet``; returns the local copy."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({f"c{i}": rng.random(200_000) for i in range(COLUMNS)})
    path = tmp_path_factory.mktemp("fsspec") / "wide.parquet"
    frame.to_parquet(path, row_group_size=50_000)
    bucket.upload_file(path, name="data/wide.parquet", progress=False)
    return path


def url(bucket: Bucket, name: str) -> str:
    return f"frameport://{bucket.id}/{name}"


def test_the_protocol_is_found_through_the_entry_point(options: dict[str, Any]) -> None:
    assert fsspec.get_filesystem_class("frameport") is FrameportFileSystem
    fs = fsspec.filesystem("frameport", **options)
    assert isinstance(fs, FrameportFileSystem)
    assert options["key"] not in repr(fs)


def test_read_parquet_of_one_column_fetches_less_than_the_file(
    bucket: Bucket, options: dict[str, Any], parquet_file: Path
) -> None:
    fs = fsspec.filesystem("frameport", **options)  # the instance pandas gets too
    before = fs.received_bytes
    read = pd.read_parquet(
        url(bucket, "data/wide.parquet"), columns=["c2"], storage_options=options
    )
    fetched = fs.received_bytes - before
    pd.testing.assert_frame_equal(read, pd.read_parquet(parquet_file, columns=["c2"]))
    size = parquet_file.stat().st_size
    column_bytes = sum(
        group.column(2).total_compressed_size
        for group in map(pq.ParquetFile(parquet_file).metadata.row_group, range(4))
    )
    assert column_bytes <= fetched < size / 3  # the column chunks and the footer, little more


def test_a_whole_read_matches_the_local_file(
    bucket: Bucket, options: dict[str, Any], parquet_file: Path
) -> None:
    read = pd.read_parquet(url(bucket, "data/wide.parquet"), storage_options=options)
    pd.testing.assert_frame_equal(read, pd.read_parquet(parquet_file))


def test_ls_and_info(bucket: Bucket, options: dict[str, Any], parquet_file: Path) -> None:
    fs = FrameportFileSystem(**options)
    assert {"name": bucket.id, "size": 0, "type": "directory"} in fs.ls("")
    assert fs.ls(bucket.id, detail=False) == [f"{bucket.id}/data"]
    [entry] = fs.ls(url(bucket, "data"))
    assert entry["name"] == f"{bucket.id}/data/wide.parquet"
    assert entry["type"] == "file" and entry["size"] == parquet_file.stat().st_size
    info = fs.info(url(bucket, "data/wide.parquet"))
    assert info == entry
    assert info["mimetype"] == "application/vnd.apache.parquet"
    assert fs.info(f"{bucket.id}/{info['id']}")["name"] == info["name"]  # by ID as well
    assert fs.isdir(url(bucket, "data")) and fs.isdir(bucket.id)
    assert not fs.exists(url(bucket, "data/missing.parquet"))
    with pytest.raises(FileNotFoundError):
        fs.info(url(bucket, "nothing/here"))


def test_open_seek_and_ranged_reads(
    bucket: Bucket, options: dict[str, Any], parquet_file: Path
) -> None:
    fs = FrameportFileSystem(**options)
    local = parquet_file.read_bytes()
    path = url(bucket, "data/wide.parquet")
    with fs.open(path) as remote:
        assert remote.read(4) == b"PAR1"
        remote.seek(-8, 2)
        assert remote.read() == local[-8:]
        remote.seek(1_000_000)
        assert remote.read(3) == local[1_000_000:1_000_003]
    for start, end in [(0, 1), (5, 6), (len(local) - 1, None), (-3, None), (10, 17_000_000)]:
        assert fs.cat_file(path, start, end) == local[start:end]
    before = fs.received_bytes
    assert fs.cat(path) == local
    assert fs.received_bytes - before == len(local)


def test_write_overwrite_cat_get_and_rm(
    bucket: Bucket, options: dict[str, Any], tmp_path: Path
) -> None:
    fs = FrameportFileSystem(**options)
    path = url(bucket, "notes/today.txt")
    with fs.open(path, "wb") as out:
        out.write(b"first")
    with fs.open(path, "wb") as out:
        out.write(b"second version")
    assert fs.cat(path) == b"second version"
    assert len([f for f in bucket.list_files()["name"] if f == "notes/today.txt"]) == 1
    fs.get(path, str(tmp_path / "today.txt"))
    assert (tmp_path / "today.txt").read_bytes() == b"second version"
    (tmp_path / "tiny.bin").write_bytes(b"x")
    fs.put(str(tmp_path / "tiny.bin"), url(bucket, "notes/tiny.bin"))
    assert fs.cat_file(url(bucket, "notes/tiny.bin"), 0, 1) == b"x"
    assert fs.ls(url(bucket, "notes"), detail=False) == [
        f"{bucket.id}/notes/tiny.bin",
        f"{bucket.id}/notes/today.txt",
    ]
    fs.rm(url(bucket, "notes"), recursive=True)
    assert not fs.exists(url(bucket, "notes"))
    assert fs.exists(bucket.id)  # the bucket stays
    with pytest.raises(FileNotFoundError):
        fs.rm_file(path)


def test_pandas_writes_and_reads_csv_by_url(bucket: Bucket, options: dict[str, Any]) -> None:
    frame = pd.DataFrame({"name": ["Ada", "Grace"], "age": [36, 45]})
    frame.to_csv(url(bucket, "people.csv"), index=False, storage_options=options)
    read = pd.read_csv(url(bucket, "people.csv"), storage_options=options)
    pd.testing.assert_frame_equal(read, frame)


def test_a_client_option_and_the_environment(
    bucket: Bucket,
    key_client: Client,
    options: dict[str, Any],
    parquet_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = fsspec.filesystem("frameport", client=key_client)
    assert first.client is key_client
    assert fsspec.filesystem("frameport", client=key_client) is not first  # never cached
    assert first.info(url(bucket, "data/wide.parquet"))["size"] == parquet_file.stat().st_size
    monkeypatch.setenv("FRAMEPORT_ENDPOINT", options["endpoint"])
    monkeypatch.setenv("FRAMEPORT_PROJECT", options["project"])
    monkeypatch.setenv("FRAMEPORT_KEY", options["key"])
    from_env = FrameportFileSystem(skip_instance_cache=True)
    assert from_env.exists(url(bucket, "data/wide.parquet"))


def test_missing_settings_are_named() -> None:
    with pytest.raises(ValueError, match="endpoint"):
        FrameportFileSystem(skip_instance_cache=True, project="demo")
