"""Uploads and downloads against a service that fails 20 % of requests (refusals, dropped
connections, changes applied and then the answer dropped): every file still arrives whole."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from frameport import ID, Bucket
from frameport.local import LocalService
from storage_support import CREATE_FILE_ROUTE, MIB, local_storage_service

pytest_plugins = ["storage_fixtures"]
pytestmark = pytest.mark.usefixtures("checkpoint_dir")


@pytest.fixture(scope="module")
def faulty_service() -> Iterator[LocalService]:
    with local_storage_service(faults="0.2:7") as svc:
        yield svc


@pytest.fixture(scope="module")
def bucket(faulty_service: LocalService) -> Iterator[Bucket]:
    with faulty_service.client() as client:
        yield client.create_bucket(ID.unique(), "faults")


@pytest.mark.parametrize("size", [1, 5 * MIB, 5 * MIB + 1, 23 * MIB, 64 * MIB])
def test_every_upload_completes_identical(bucket: Bucket, tmp_path: Path, size: int):
    data = random.Random(size).randbytes(size)
    path = tmp_path / "source.bin"
    path.write_bytes(data)

    uploaded = bucket.upload_file(path)
    written = bucket.download(uploaded.id, tmp_path / "copy.bin")

    assert uploaded.complete and uploaded.size == size
    assert isinstance(written, Path) and written.read_bytes() == data
    assert bucket.download(uploaded.id) == data


def test_dataframes_and_listings_survive_faults(bucket: Bucket):
    frame = pd.DataFrame({"n": range(100_000), "s": [f"row {i}" for i in range(100_000)]})
    uploaded = bucket.upload_dataframe(frame, "frame.parquet")
    pd.testing.assert_frame_equal(bucket.read_parquet(uploaded.id), frame)
    assert uploaded.id in set(bucket.list_files()["$id"])


def test_an_adaptive_upload_to_a_distant_faulty_service_reads_back_identical(
    tmp_path: Path,
) -> None:
    data = random.Random(41).randbytes(41 * MIB)
    path = tmp_path / "source.bin"
    path.write_bytes(data)
    with (
        LocalService(
            rate_limit_overrides={CREATE_FILE_ROUTE: (10_000, 60)},
            faults="0.2:11",
            latency="20:5",
        ) as svc,
        svc.client() as client,
    ):
        bucket = client.create_bucket(ID.unique(), "adaptive")
        uploaded = bucket.upload_file(path, concurrency="auto")
        assert uploaded.complete and uploaded.size == len(data)
        assert bucket.download(uploaded.id) == data
        assert len(svc.faults) > 0


def test_the_service_fails_a_fifth_of_the_requests(faulty_service: LocalService, bucket: Bucket):
    """The faults the tests above meet are real: 50 listings meet some (all 50 passing at
    20 % has a chance of 1 in 70,000), and each listing still answers."""
    before = len(faulty_service.faults)
    for _ in range(50):
        bucket.list_files()
    assert len(faulty_service.faults) > before
