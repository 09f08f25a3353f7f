"""Resuming uploads across processes: a process killed after some parts leaves a checkpoint;
``upload_file(..., resume=True)`` in another process sends only the parts still missing.

The killed upload runs in a subprocess whose `on_progress` sends SIGKILL to its own process
after N acknowledged parts. Parts are counted at the service (the file record's
``chunksUploaded``) and by the resumed client (one `on_progress` call per part it sent).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from frameport import ID, Bucket, Client
from frameport.local import LocalService
from storage_support import MIB

SIZE = 41 * MIB + 12345  # 9 parts
PARTS = 9

KILLED_UPLOAD = textwrap.dedent(
    """
    import os, signal, sys
    from frameport import Client

    bucket_id, path, kill_after, concurrency = sys.argv[1:]
    acknowledged = 0

    def on_progress(done, total):
        global acknowledged
        acknowledged += 1
        if acknowledged == int(kill_after):
            os.kill(os.getpid(), signal.SIGKILL)

    client = Client.from_env()
    client.bucket(bucket_id).upload_file(
        path, on_progress=on_progress, progress=False, concurrency=int(concurrency)
    )
    sys.exit("the upload finished before it was killed")
    """
)

pytest_plugins = ["storage_fixtures"]
pytestmark = pytest.mark.usefixtures("checkpoint_dir")


@pytest.fixture
def bucket(storage_client: Client) -> Bucket:
    return storage_client.create_bucket(ID.unique(), "resume")


@pytest.fixture
def source(tmp_path: Path) -> tuple[Path, bytes]:
    data = random.Random(41).randbytes(SIZE)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    return path, data


def kill_upload_after(
    storage_service: LocalService,
    checkpoint_dir: Path,
    bucket: Bucket,
    path: Path,
    parts: int,
    concurrency: int,
) -> None:
    environment = {
        **os.environ,
        "FRAMEPORT_ENDPOINT": storage_service.endpoint,
        "FRAMEPORT_PROJECT": storage_service.project,
        "FRAMEPORT_KEY": storage_service.key,
        "FRAMEPORT_CACHE_DIR": str(checkpoint_dir),
    }
    arguments = [bucket.id, str(path), str(parts), str(concurrency)]
    run = subprocess.run(
        [sys.executable, "-c", KILLED_UPLOAD, *arguments],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == -9, run.stderr


def only_file(bucket: Bucket) -> pd.Series:
    files = bucket.list_files(details=True)
    assert len(files) == 1, files
    return files.iloc[0]


def checkpoints(checkpoint_dir: Path) -> list[dict[str, object]]:
    return [json.loads(path.read_text()) for path in (checkpoint_dir / "uploads").glob("*.json")]


@pytest.mark.parametrize(("killed_after", "concurrency"), [(3, 1), (5, 4)])
def test_a_killed_upload_resumes_with_only_the_missing_parts(
    storage_service: LocalService,
    checkpoint_dir: Path,
    bucket: Bucket,
    source: tuple[Path, bytes],
    killed_after: int,
    concurrency: int,
):
    path, data = source
    kill_upload_after(storage_service, checkpoint_dir, bucket, path, killed_after, concurrency)

    partial = only_file(bucket)
    on_service = int(partial["chunksUploaded"])
    assert partial["chunksTotal"] == PARTS
    # Parts in flight when the process died may have arrived without being acknowledged.
    assert killed_after <= on_service <= killed_after + concurrency - 1
    (checkpoint,) = checkpoints(checkpoint_dir)
    acknowledged = checkpoint["parts"]
    assert isinstance(acknowledged, list) and len(acknowledged) == killed_after
    assert 1 in acknowledged  # the first part goes alone, before the others
    if concurrency == 1:
        assert acknowledged == list(range(1, killed_after + 1))
    assert checkpoint["upload_id"] == partial["$id"]
    assert storage_service.key not in json.dumps(checkpoint)

    sent: list[int] = []
    resumed = bucket.upload_file(
        path,
        resume=True,
        concurrency=concurrency,
        on_progress=lambda done, total: sent.append(done),
    )

    assert resumed.id == partial["$id"]
    assert len(sent) == PARTS - killed_after  # nothing acknowledged was sent again
    assert len(sent) >= PARTS - on_service  # every part the service lacked was sent
    if concurrency == 1:
        assert len(sent) == PARTS - on_service
    assert sent[-1] == SIZE
    assert resumed.complete and resumed.size == SIZE
    assert bucket.download(resumed.id) == data
    assert only_file(bucket)["$id"] == resumed.id
    assert checkpoints(checkpoint_dir) == []


def test_a_changed_source_starts_over_under_a_new_id(
    storage_service: LocalService,
    checkpoint_dir: Path,
    bucket: Bucket,
    source: tuple[Path, bytes],
):
    path, _ = source
    kill_upload_after(storage_service, checkpoint_dir, bucket, path, 2, 1)
    partial_id = only_file(bucket)["$id"]
    changed = random.Random(7).randbytes(SIZE)
    path.write_bytes(changed)
    os.utime(path, ns=(1, 1))  # another modification time, whatever the clock's resolution

    sent: list[int] = []
    uploaded = bucket.upload_file(path, resume=True, on_progress=lambda d, t: sent.append(d))

    assert uploaded.id != partial_id
    assert len(sent) == PARTS
    assert bucket.download(uploaded.id) == changed
    assert only_file(bucket)["$id"] == uploaded.id  # the stale partial file was deleted


def test_without_resume_a_new_upload_replaces_the_unfinished_one(
    storage_service: LocalService,
    checkpoint_dir: Path,
    bucket: Bucket,
    source: tuple[Path, bytes],
):
    path, data = source
    kill_upload_after(storage_service, checkpoint_dir, bucket, path, 2, 1)
    partial_id = only_file(bucket)["$id"]

    uploaded = bucket.upload_file(path)

    assert uploaded.id != partial_id
    assert bucket.download(uploaded.id) == data
    assert only_file(bucket)["$id"] == uploaded.id


def test_resume_after_the_service_lost_the_unfinished_file_sends_everything(
    storage_service: LocalService,
    checkpoint_dir: Path,
    bucket: Bucket,
    source: tuple[Path, bytes],
):
    path, data = source
    kill_upload_after(storage_service, checkpoint_dir, bucket, path, 4, 1)
    partial_id = only_file(bucket)["$id"]
    bucket.delete(partial_id)

    sent: list[int] = []
    uploaded = bucket.upload_file(path, resume=True, on_progress=lambda d, t: sent.append(d))

    assert uploaded.id == partial_id
    assert len(sent) == PARTS
    assert bucket.download(uploaded.id) == data


def test_an_upload_killed_after_its_last_part_resumes_without_sending(
    storage_service: LocalService,
    checkpoint_dir: Path,
    bucket: Bucket,
    source: tuple[Path, bytes],
):
    path, data = source
    kill_upload_after(storage_service, checkpoint_dir, bucket, path, PARTS, 2)
    assert only_file(bucket)["chunksUploaded"] == PARTS

    sent: list[int] = []
    resumed = bucket.upload_file(path, resume=True, on_progress=lambda d, t: sent.append(d))

    assert sent == []
    assert resumed.complete and bucket.download(resumed.id) == data
    assert checkpoints(checkpoint_dir) == []


def test_after_a_finished_upload_resume_uploads_anew(
    checkpoint_dir: Path, bucket: Bucket, source: tuple[Path, bytes]
):
    path, data = source
    first = bucket.upload_file(path)
    again = bucket.upload_file(path, resume=True)
    assert again.id != first.id  # a finished upload leaves no checkpoint behind
    assert bucket.download(again.id) == data


def test_resume_without_a_checkpoint_is_a_plain_upload(
    checkpoint_dir: Path, bucket: Bucket, source: tuple[Path, bytes]
):
    path, data = source
    uploaded = bucket.upload_file(path, resume=True)
    assert bucket.download(uploaded.id) == data
    assert not checkpoint_dir.exists() or checkpoints(checkpoint_dir) == []
