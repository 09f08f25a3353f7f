"""Helpers shared by the bucket and function tests (their fixtures: `storage_fixtures`)."""

from __future__ import annotations

import random
from pathlib import Path

from frameport.local import LocalService

MIB = 1024 * 1024
CREATE_FILE_ROUTE = "POST /v1/storage/buckets/{bucketId}/files"


def local_storage_service(faults: str | None = None) -> LocalService:
    """A local service (start it with ``with``) whose file-create limit is 10,000 a minute.

    The client's throttle holds requests back once ``X-RateLimit-Remaining`` reaches 0, and
    the service sends that header to API keys too (without enforcing the limit): with the
    default 60 creates a minute, tests making more uploads would wait for the next window.
    """
    return LocalService(rate_limit_overrides={CREATE_FILE_ROUTE: (10_000, 60)}, faults=faults)


def random_file(directory: Path, size: int, seed: int = 0) -> tuple[Path, bytes]:
    """A file of `size` seeded random bytes in `directory`, and its bytes."""
    data = random.Random(size * 31 + seed).randbytes(size)
    path = directory / f"source-{size}-{seed}.bin"
    path.write_bytes(data)
    return path, data
