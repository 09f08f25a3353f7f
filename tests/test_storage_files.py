"""Reading a bucket over HTTP: file listings as typed DataFrames (every page), file records,
downloads resumed from a ``.part`` file and checked, previews, preview URLs and deletes."""

from __future__ import annotations

import io
import random
from pathlib import Path

import httpx
import pandas as pd
import pytest
from PIL import Image

from cutting_proxy import CuttingProxy
from frameport import (
    ID,
    Bucket,
    Client,
    DownloadVerificationError,
    File,
    NotFoundError,
    Permission,
    Role,
    TransportError,
)
from frameport._records import PAGE_SIZE
from frameport.local import LocalService
from storage_support import MIB

pytest_plugins = ["storage_fixtures"]
pytestmark = pytest.mark.usefixtures("checkpoint_dir")


@pytest.fixture(scope="module")
def bucket(storage_client: Client) -> Bucket:
    return storage_client.create_bucket(
        ID.unique(), "files", permissions=[Permission.read(Role.any())]
    )


@pytest.fixture(scope="module")
def big_file(bucket: Bucket) -> tuple[File, bytes]:
    data = random.Random(12).randbytes(27 * MIB + 5)
    return bucket.upload_bytes(data, "big.bin"), data


def test_list_files_reads_every_page_into_typed_columns(storage_client: Client):
    bucket = storage_client.create_bucket(ID.unique(), "many")
    uploaded = [
        bucket.upload_bytes(f"file {n}".encode(), f"f{n}.txt") for n in range(PAGE_SIZE + 7)
    ]

    files = bucket.list_files(details=True)

    assert list(files["$id"]) == [f.id for f in uploaded]
    assert list(files["sizeOriginal"]) == [f.size for f in uploaded]
    assert files["sizeOriginal"].dtype == "Int64"
    assert files["chunksTotal"].dtype == "Int64"
    assert files["$createdAt"].dtype == "datetime64[ms, UTC]"
    assert files["name"].dtype == "str"
    assert files["encryption"].dtype == "boolean"
    assert uploaded[0].created_at is not None
    assert files.loc[0, "$createdAt"] == pd.Timestamp(uploaded[0].created_at)
    assert list(files["$permissions"][0]) == []


def test_an_empty_bucket_lists_no_files_with_the_same_columns(storage_client: Client):
    files = storage_client.create_bucket(ID.unique(), "empty").list_files(details=True)
    assert len(files) == 0
    assert files["sizeOriginal"].dtype == "Int64"
    assert "$updatedAt" in files.columns


def test_get_returns_the_file_record(bucket: Bucket, big_file: tuple[File, bytes]):
    uploaded, data = big_file
    record = bucket.get(uploaded.id)
    assert record == uploaded
    assert (record.id, record.name, record.size) == (uploaded.id, "big.bin", len(data))
    assert record.bucket_id == bucket.id
    assert record.complete and record.chunks_total == 6


def test_a_download_continues_from_the_part_file(
    bucket: Bucket, big_file: tuple[File, bytes], tmp_path: Path
):
    uploaded, data = big_file
    destination = tmp_path / "big.bin"
    for already in (1, 5 * MIB, 17 * MIB + 3, len(data) - 1, len(data)):
        Path(f"{destination}.part").write_bytes(data[:already])
        reported: list[int] = []

        bucket.download(uploaded.id, destination, on_progress=lambda d, t: reported.append(d))  # noqa: B023

        assert destination.read_bytes() == data
        assert not Path(f"{destination}.part").exists()
        assert all(done > already for done in reported)  # the bytes on disk were not fetched
        destination.unlink()


def test_a_download_into_a_directory_takes_the_file_name(
    bucket: Bucket, big_file: tuple[File, bytes], tmp_path: Path
):
    uploaded, data = big_file
    assert bucket.download(uploaded.id, tmp_path) == tmp_path / "big.bin"
    assert (tmp_path / "big.bin").read_bytes() == data


def test_a_part_file_of_another_file_fails_the_check_and_is_removed(
    bucket: Bucket, big_file: tuple[File, bytes], tmp_path: Path
):
    uploaded, data = big_file
    destination = tmp_path / "big.bin"
    partial = Path(f"{destination}.part")
    partial.write_bytes(b"\0" * MIB)

    with pytest.raises(DownloadVerificationError) as caught:
        bucket.download(uploaded.id, destination)

    assert caught.value.check == "signature"
    assert not partial.exists() and not destination.exists()
    bucket.download(uploaded.id, destination)
    assert destination.read_bytes() == data


def test_read_csv_passes_reader_options(bucket: Bucket):
    uploaded = bucket.upload_bytes(b"a;b\n1;x\n2;y\n", "semi.csv")
    frame = bucket.read_csv(uploaded.id, sep=";")
    assert frame.to_dict("list") == {"a": [1, 2], "b": ["x", "y"]}


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def test_preview_scales_an_image(bucket: Bucket):
    uploaded = bucket.upload_bytes(png(120, 60), "red.png")
    image = Image.open(io.BytesIO(bucket.preview(uploaded.id, width=30, output="png")))
    assert (image.format, image.size) == ("PNG", (30, 15))
    bordered = bucket.preview(uploaded.id, width=30, border_width=2, border_color="00ff00")
    assert Image.open(io.BytesIO(bordered)).size[0] >= 30


def test_a_non_image_previews_as_an_icon(bucket: Bucket, big_file: tuple[File, bytes]):
    uploaded, _ = big_file
    assert Image.open(io.BytesIO(bucket.preview(uploaded.id))).format == "PNG"


def test_unknown_preview_options_are_refused(bucket: Bucket):
    with pytest.raises(TypeError, match="widht"):
        bucket.preview_url("f1", widht=10)


def test_the_preview_url_loads_without_credentials(storage_service: LocalService, bucket: Bucket):
    uploaded = bucket.upload_bytes(png(40, 40), "square.png")
    url = bucket.preview_url(uploaded.id, width=20, border_radius=3)
    assert url.startswith(storage_service.endpoint)
    query = httpx.URL(url).params
    assert query["project"] == storage_service.project
    assert (query["width"], query["borderRadius"]) == ("20", "3")
    assert storage_service.key not in url
    response = httpx.get(url)  # as a browser would: no headers
    assert response.status_code == 200
    assert Image.open(io.BytesIO(response.content)).size == (20, 20)


def test_delete_removes_the_file(bucket: Bucket):
    uploaded = bucket.upload_bytes(b"short-lived", "gone.txt")
    bucket.delete(uploaded.id)
    with pytest.raises(NotFoundError):
        bucket.get(uploaded.id)
    assert uploaded.id not in set(bucket.list_files()["$id"])


def test_buckets_and_files_have_plain_reprs(storage_client: Client):
    bucket = storage_client.bucket("reports")
    assert repr(bucket) == "Bucket(id='reports')"
    with pytest.raises(ValueError):
        storage_client.bucket("../etc")


def test_a_download_cut_short_mid_body_continues_where_it_stopped(
    storage_service: LocalService, bucket: Bucket, big_file: tuple[File, bytes], tmp_path: Path
):
    uploaded, data = big_file
    with (
        CuttingProxy(storage_service.endpoint, cut_after=3 * MIB, cuts=2) as proxy,
        Client(proxy.endpoint, storage_service.project, key=storage_service.key) as far,
    ):
        path = far.bucket(bucket.id).download(uploaded.id, tmp_path / "big.bin")
    assert proxy.cuts_made == 2
    assert isinstance(path, Path) and path.read_bytes() == data


def test_a_download_that_keeps_breaking_off_is_a_transport_error_and_keeps_its_bytes(
    storage_service: LocalService, bucket: Bucket, big_file: tuple[File, bytes], tmp_path: Path
):
    uploaded, data = big_file
    destination = tmp_path / "big.bin"
    with CuttingProxy(storage_service.endpoint, cut_after=0, cuts=None) as proxy:
        far = Client(proxy.endpoint, storage_service.project, key=storage_service.key, retries=2)
        with far, pytest.raises(TransportError, match=r"call download\(\) again"):
            far.bucket(bucket.id).download(uploaded.id, destination)
    assert proxy.cuts_made == 3  # the first answer and the policy's two retries, no more
    bucket.download(uploaded.id, destination)  # straight to the service: completes
    assert destination.read_bytes() == data
