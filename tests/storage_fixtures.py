"""Fixtures shared by the bucket and function tests, loaded by a test module with
``pytest_plugins = ["storage_fixtures"]``:

* `storage_service` — a local service for these tests (session-scoped), whose file-create rate
  limit many uploads do not spend (see `storage_support.local_storage_service`).
* `storage_client` — an API-key `Client` for it (session-scoped).
* `checkpoint_dir` — a fresh FRAMEPORT_CACHE_DIR for upload checkpoints; progress bars off.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from frameport import Client
from frameport.local import LocalService
from storage_support import local_storage_service


@pytest.fixture(scope="session")
def storage_service() -> Iterator[LocalService]:
    with local_storage_service() as service:
        yield service


@pytest.fixture(scope="session")
def storage_client(storage_service: LocalService) -> Iterator[Client]:
    with storage_service.client() as client:
        yield client


@pytest.fixture
def checkpoint_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("FRAMEPORT_CACHE_DIR", str(directory))
    monkeypatch.setenv("FRAMEPORT_PROGRESS", "0")
    return directory
