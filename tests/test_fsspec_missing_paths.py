"""fsspec conventions for paths that do not exist: a missing bucket or file is a
FileNotFoundError wherever a path is read or removed, as on a local filesystem."""

from __future__ import annotations

import pandas as pd
import pytest

from frameport import ID, Bucket, Client
from frameport._fsspec import FrameportFileSystem
from frameport.local import LocalService


@pytest.fixture(scope="module")
def bucket(key_client: Client) -> Bucket:
    return key_client.create_bucket(f"fs-{ID.unique()}", "fsspec missing paths")


@pytest.fixture(scope="module")
def fs(service: LocalService) -> FrameportFileSystem:
    return FrameportFileSystem(endpoint=service.endpoint, project=service.project, key=service.key)


def test_a_missing_bucket_is_file_not_found_for_every_read(
    fs: FrameportFileSystem, service: LocalService
) -> None:
    path = f"frameport://{ID.unique()}/data.parquet"
    options = {"endpoint": service.endpoint, "project": service.project, "key": service.key}
    for call in (
        lambda: fs.info(path),
        lambda: fs.open(path, "rb"),
        lambda: fs.cat(path),
        lambda: fs.rm(path),
        lambda: pd.read_parquet(path, storage_options=options),
    ):
        with pytest.raises(FileNotFoundError):
            call()
    assert not fs.exists(path)


def test_rm_of_a_missing_file_raises_and_deletes_nothing(
    fs: FrameportFileSystem, bucket: Bucket
) -> None:
    fs.pipe(f"frameport://{bucket.id}/keep.txt", b"kept")
    with pytest.raises(FileNotFoundError, match=r"kep\.txt"):
        fs.rm(f"frameport://{bucket.id}/kep.txt")
    assert fs.cat(f"frameport://{bucket.id}/keep.txt") == b"kept"
    fs.rm(f"frameport://{bucket.id}/keep.txt")
    assert not fs.exists(f"frameport://{bucket.id}/keep.txt")


def test_rm_of_a_folder_without_recursive_keeps_its_files(
    fs: FrameportFileSystem, bucket: Bucket
) -> None:
    fs.pipe(f"frameport://{bucket.id}/folder/a.txt", b"a")
    fs.rm(f"frameport://{bucket.id}/folder")  # a folder is not a missing path
    assert fs.cat(f"frameport://{bucket.id}/folder/a.txt") == b"a"
    fs.rm(f"frameport://{bucket.id}/folder", recursive=True)
    assert not fs.exists(f"frameport://{bucket.id}/folder/a.txt")
