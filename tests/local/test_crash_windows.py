"""A crash anywhere in a chunked upload's last steps leaves nothing a resumed upload trips on.

The service process is ended (`os._exit`, like SIGKILL) at a named point through the test
hook `FRAMEPORT_LOCAL_CRASH_AT`, then started again on the same data directory and port;
`upload_file(..., resume=True)` must then finish with the same bytes, and nothing the crash
left behind (staged chunks, a half-joined file, parts of a complete file) may remain.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest
from served import KEY, PROJECT, ServedService, free_port, served

import frameport as fp
from frameport.local.service._crash_points import CRASH_EXIT_STATUS, ENVIRONMENT_VARIABLE

MIB = 1024 * 1024
SIZE = 2 * 5 * MIB + 4321  # three parts


@pytest.fixture
def source(tmp_path: Path) -> tuple[Path, bytes]:
    data = random.Random(7).randbytes(SIZE)
    path = tmp_path / "upload.bin"
    path.write_bytes(data)
    return path, data


@pytest.fixture(autouse=True)
def checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRAMEPORT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FRAMEPORT_PROGRESS", "0")


def client_for(service: ServedService) -> fp.Client:
    return fp.Client(service.endpoint, PROJECT, key=KEY, retries=0)


def leftovers(bucket_dir: Path) -> list[str]:
    """Files a crash can leave: staged chunks, joins and parts (all under dot names)."""
    found = (path.relative_to(bucket_dir) for path in bucket_dir.rglob("*") if path.is_file())
    return sorted(str(path) for path in found if any(p.startswith(".") for p in path.parts))


@pytest.mark.parametrize(
    "point", ["chunk.staged", "upload.joined", "upload.recorded", "upload.placed"]
)
def test_resume_finishes_identically_after_a_crash_at(
    tmp_path: Path, source: tuple[Path, bytes], point: str
) -> None:
    path, data = source
    data_dir, port = tmp_path / "service", free_port()
    with served(data_dir, env={ENVIRONMENT_VARIABLE: point}, port=port) as doomed:
        with client_for(doomed) as client:
            bucket = client.create_bucket("crashes", "crashes")
            with pytest.raises(fp.TransportError):
                bucket.upload_file(path, resume=True, concurrency=1)
        assert doomed.wait_dead() == CRASH_EXIT_STATUS
    bucket_dir = data_dir / "files" / "crashes"
    if point == "chunk.staged":
        assert [name for name in leftovers(bucket_dir) if name.startswith(".incoming/")]
    with served(data_dir, port=port) as restarted:
        # Parts of an unfinished upload stay: the resumed upload needs them.
        stray = [name for name in leftovers(bucket_dir) if not name.startswith(".parts/")]
        assert stray == [], "orphans after the restart"
        with client_for(restarted) as client:
            bucket = client.bucket("crashes")
            uploaded = bucket.upload_file(path, resume=True, concurrency=1)
            assert (uploaded.chunks_uploaded, uploaded.chunks_total) == (3, 3)
            assert uploaded.signature == hashlib.md5(data).hexdigest()
            assert bucket.download(uploaded.id) == data
            assert len(bucket.list_files()) == 1
        assert leftovers(bucket_dir) == []
