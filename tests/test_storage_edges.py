"""Reading bucket files at the edges: a file that is not Parquet, byte ranges outside the file,
and no progress bar for transfers too quick to need one."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from frameport import ID, Bucket, Client, File, FileFormatError, FrameportError

pytest_plugins = ["storage_fixtures"]
pytestmark = pytest.mark.usefixtures("checkpoint_dir")

CSV = b"name,age\nAda,36\nGrace,45\n"


@pytest.fixture(scope="module")
def bucket(storage_client: Client) -> Bucket:
    return storage_client.create_bucket(ID.unique(), "edges")


@pytest.fixture(scope="module")
def csv_file(bucket: Bucket) -> File:
    return bucket.upload_bytes(CSV, "people.csv")


def test_read_parquet_of_a_file_that_is_not_parquet_raises_a_typed_error(
    bucket: Bucket, csv_file: File
) -> None:
    with pytest.raises(FileFormatError) as caught:
        bucket.read_parquet(csv_file.id)
    error = caught.value
    assert isinstance(error, FrameportError) and isinstance(error, ValueError)
    assert error.file_id == csv_file.id
    assert f"File {csv_file.id!r} is not a readable Parquet file" in str(error)
    assert "read_csv()" in str(error)
    assert bucket.read_csv(csv_file.id).equals(pd.read_csv(io.BytesIO(CSV)))


def test_read_parquet_still_reads_parquet_and_its_columns(bucket: Bucket) -> None:
    frame = pd.DataFrame({"name": ["Ada", "Grace"], "age": [36, 45]})
    uploaded = bucket.upload_dataframe(frame, "people.parquet")
    assert bucket.read_parquet(uploaded.id).equals(frame)
    assert bucket.read_parquet(uploaded.id, columns=["age"]).equals(frame[["age"]])


@pytest.mark.parametrize(("start", "end", "named"), [(-5, 10, "start"), (0, -1, "end")])
def test_read_range_refuses_negative_offsets(
    bucket: Bucket, csv_file: File, start: int, end: int, named: str
) -> None:
    with pytest.raises(ValueError, match=rf"^{named} must be a byte offset >= 0 \(got -\d\)"):
        bucket.read_range(csv_file.id, start, end)


def test_read_range_reads_within_and_cuts_at_the_end(bucket: Bucket, csv_file: File) -> None:
    assert bucket.read_range(csv_file.id, 0, 4) == CSV[:4]
    assert bucket.read_range(csv_file.id, 9, 10_000) == CSV[9:]
    assert bucket.read_range(csv_file.id, 5, 5) == b""


def test_quick_transfers_show_no_progress_bar(
    bucket: Bucket,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("FRAMEPORT_PROGRESS")  # the default: bars on
    uploaded = bucket.upload_bytes(CSV, "quick.csv")
    bucket.download(uploaded.id, tmp_path / "quick.csv")
    assert capsys.readouterr().err == ""
    bucket.download(uploaded.id, tmp_path / "asked.csv", progress=True)
    assert "quick.csv" in capsys.readouterr().err  # asked for: shown at once
