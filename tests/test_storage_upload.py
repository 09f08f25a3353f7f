"""Uploads to a bucket over HTTP: every size around the 5 MiB part boundary reads back identical,
DataFrames round-trip in each format, permissions arrive as given, and the final check holds."""

from __future__ import annotations

import hashlib
import io
import random
from pathlib import Path
from typing import Literal

import pandas as pd
import pytest

from frameport import (
    ID,
    BadRequestError,
    Bucket,
    Client,
    ConflictError,
    FrameportError,
    Permission,
    Role,
    UploadVerificationError,
)
from frameport._transfer._upload import CHUNK_SIZE, plan_parts, verify_file_record
from storage_support import MIB, random_file

pytest_plugins = ["storage_fixtures"]
pytestmark = pytest.mark.usefixtures("checkpoint_dir")
SIZES = [1, 5 * MIB - 1, 5 * MIB, 5 * MIB + 1, 23 * MIB, 64 * MIB]


@pytest.fixture(scope="module")
def bucket(storage_client: Client) -> Bucket:
    return storage_client.create_bucket(ID.unique(), "uploads")


@pytest.mark.parametrize("size", SIZES)
def test_a_file_of_each_size_reads_back_identical(bucket: Bucket, tmp_path: Path, size: int):
    path, data = random_file(tmp_path, size)
    reported: list[tuple[int, int]] = []

    uploaded = bucket.upload_file(
        path, on_progress=lambda done, total: reported.append((done, total))
    )

    assert uploaded.size == size
    assert uploaded.name == path.name
    assert uploaded.complete and uploaded.chunks_total == len(plan_parts(size))
    assert uploaded.chunks_total == (1 if size <= CHUNK_SIZE else -(-size // CHUNK_SIZE))
    assert bucket.download(uploaded.id) == data
    assert bucket.download(uploaded.id, tmp_path / "copy.bin") == tmp_path / "copy.bin"
    assert (tmp_path / "copy.bin").read_bytes() == data
    assert not (tmp_path / "copy.bin.part").exists()
    assert [done for done, _ in reported] == sorted(done for done, _ in reported)
    assert reported[-1] == (size, size)
    assert len(reported) == uploaded.chunks_total


def test_an_empty_file_uploads_and_reads_back_empty(bucket: Bucket, tmp_path: Path):
    path, _ = random_file(tmp_path, 0)
    uploaded = bucket.upload_file(path)
    assert uploaded.complete and uploaded.size == 0
    assert uploaded.signature == hashlib.md5(b"").hexdigest()
    assert bucket.download(uploaded.id) == b""
    assert bucket.upload_bytes(b"", "empty.bin").size == 0


@pytest.mark.parametrize("concurrency", [1, 8])
def test_the_number_of_parallel_parts_does_not_change_the_file(
    bucket: Bucket, tmp_path: Path, concurrency: int
):
    path, data = random_file(tmp_path, 17 * MIB + 3, seed=concurrency)
    uploaded = bucket.upload_file(path, concurrency=concurrency)
    assert bucket.download(uploaded.id) == data


def test_upload_bytes_and_a_chosen_id(bucket: Bucket):
    data = random.Random(5).randbytes(6 * MIB)
    file_id = ID.unique()
    uploaded = bucket.upload_bytes(data, "blob.bin", file_id=file_id)
    assert uploaded.id == file_id
    assert bucket.get(file_id).signature == uploaded.signature
    assert bucket.download(file_id) == data


@pytest.mark.parametrize("size", [10, 12 * MIB])
def test_a_chosen_id_that_is_taken_is_a_conflict_and_the_file_stays(bucket: Bucket, size: int):
    file_id = ID.unique()
    original = bucket.upload_bytes(b"original", "taken.txt", file_id=file_id)
    with pytest.raises(ConflictError):
        bucket.upload_bytes(random.Random(1).randbytes(size), "other.bin", file_id=file_id)
    assert bucket.download(file_id) == b"original"
    assert bucket.get(file_id) == original


def test_permissions_arrive_as_given(bucket: Bucket, tmp_path: Path):
    permissions = [
        Permission.read(Role.any()),
        Permission.read(Role.team("editors", "owner")),
        Permission.update(Role.user("u1", "verified")),
        Permission.delete(Role.users()),
        Permission.update(Role.member("m1")),
    ]
    small = bucket.upload_bytes(b"x", "small.txt", permissions=permissions)
    path, _ = random_file(tmp_path, 11 * MIB)
    large = bucket.upload_file(path, permissions=permissions)
    for uploaded in (small, large):
        assert list(uploaded.permissions) == permissions
        assert bucket.get(uploaded.id).record["$permissions"] == permissions


def sample_frame(rows: int = 5000) -> pd.DataFrame:
    generator = random.Random(3)
    return pd.DataFrame(
        {
            "id": range(rows),
            "name": [f"name-{generator.randrange(10**6)}" for _ in range(rows)],
            "score": [generator.random() for _ in range(rows)],
            "flag": [generator.random() < 0.5 for _ in range(rows)],
            "when": pd.date_range("2024-01-01", periods=rows, freq="min", tz="UTC"),
        }
    )


@pytest.mark.parametrize("format", ["parquet", "csv", "feather"])
def test_dataframes_round_trip_in_each_format(
    bucket: Bucket, format: Literal["parquet", "csv", "feather"]
):
    frame = sample_frame()
    uploaded = bucket.upload_dataframe(frame, f"frame.{format}", format=format)
    assert uploaded.name == f"frame.{format}"
    data = bucket.download(uploaded.id)
    assert isinstance(data, bytes)
    if format == "parquet":
        pd.testing.assert_frame_equal(bucket.read_parquet(uploaded.id), frame)
        pd.testing.assert_frame_equal(
            bucket.read_parquet(uploaded.id, columns=["id", "score"]), frame[["id", "score"]]
        )
    elif format == "csv":
        read = bucket.read_csv(uploaded.id, parse_dates=["when"])
        pd.testing.assert_frame_equal(read, frame, check_dtype=False)
    else:
        pd.testing.assert_frame_equal(pd.read_feather(io.BytesIO(data)), frame)


def test_a_large_dataframe_goes_in_parts_and_writer_options_apply(bucket: Bucket):
    generator = random.Random(9)
    frame = pd.DataFrame({"noise": [generator.randbytes(16).hex() for _ in range(400_000)]})
    uploaded = bucket.upload_dataframe(frame, "big.parquet", compression=None)
    assert uploaded.chunks_total > 1
    pd.testing.assert_frame_equal(bucket.read_parquet(uploaded.id), frame)


def test_unknown_dataframe_format_is_refused(bucket: Bucket):
    with pytest.raises(ValueError, match="format must be one of"):
        bucket.upload_dataframe(sample_frame(3), "frame.xlsx", format="xlsx")  # type: ignore[arg-type]


def test_the_checkpoint_is_gone_after_a_complete_upload(
    bucket: Bucket, tmp_path: Path, checkpoint_dir: Path
):
    path, _ = random_file(tmp_path, 7 * MIB)
    bucket.upload_file(path)
    assert list((checkpoint_dir / "uploads").glob("*.json")) == []


def test_the_final_check_names_the_check_that_failed():
    record = {"$id": "f1", "chunksTotal": 3, "chunksUploaded": 3, "sizeOriginal": 10}
    verify_file_record({**record, "signature": "abc"}, 10, "abc")
    cases = [
        ({**record, "chunksUploaded": 2, "signature": "abc"}, "chunks"),
        ({**record, "sizeOriginal": 11, "signature": "abc"}, "size"),
        ({**record, "signature": "abd"}, "signature"),
    ]
    for bad, check in cases:
        with pytest.raises(UploadVerificationError) as caught:
            verify_file_record(bad, 10, "abc")
        assert caught.value.check == check
        assert check in str(caught.value)
        assert isinstance(caught.value, FrameportError)


def test_bucket_settings_arrive(storage_client: Client):
    bucket = storage_client.create_bucket(
        ID.unique(),
        "settings",
        permissions=[Permission.read(Role.any()), Permission.create(Role.users())],
        file_security=True,
        maximum_file_size=1000,
        allowed_file_extensions=["csv"],
        compression="gzip",
        encryption=False,
    )
    info = bucket.info()
    assert info["name"] == "settings"
    assert info["$permissions"] == ['read("any")', 'create("users")']
    assert (info["fileSecurity"], info["maximumFileSize"]) == (True, 1000)
    assert (info["allowedFileExtensions"], info["compression"]) == (["csv"], "gzip")
    assert info["encryption"] is False
    with pytest.raises(BadRequestError, match="File extension not allowed"):
        bucket.upload_bytes(b"a", "a.txt")
    with pytest.raises(BadRequestError, match="File size not allowed"):
        bucket.upload_bytes(b"a" * 1001, "a.csv")
    assert bucket.upload_bytes(b"a,b\n", "a.csv").size == 4
