"""Shared fixtures: one local service for the session, and clients for it.

* `service` — a started `LocalService` (session-scoped; rate limits on, no faults).
* `client` — an API-key `Client` for it; `key_client` — the same, one per test module (for
  module-scoped tables).
* `async_client` — an API-key `AsyncClient`; use it inside ``asyncio.run(...)``.
* `credentials` — FRAMEPORT_* in the environment naming the service, for the command line.
* `make_user` — creates a user with an e-mail and password, returns a `UserLogin`.
* `user_client` — a `Client` signed in as a new user (a session, no API key).
* `people` — an empty table (name, age) that signed-in users may read, for live tables and
  feeds of changes (a module's own `people` fixture takes its place there); `LIVE_WAIT` is
  the seconds their tests wait for a change before they fail.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from frameport import ID, AsyncClient, Client, Table
from frameport.local import LocalService
from tables_support import new_id, strings_as_in_pandas_3

# Property tests judge results, never time: no per-example deadline and no "too slow" check,
# which on a busy machine fail a correct test. Each test still sets its number of examples.
settings.register_profile("frameport", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("frameport")

strings_as_in_pandas_3()


def pytest_configure() -> None:
    """The processes the tests start (the command line, killed loads and exports, notebook
    kernels, the xdist workers) import pandas, pyarrow and the rest. Where
    PYTHONDONTWRITEBYTECODE is set, every one of them compiled those from source again, seconds
    of each start: instead they keep the compiled modules in a cache outside the source trees."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        cache = Path(tempfile.gettempdir()) / f"frameport-tests-pycache-{getpass.getuser()}"
        os.environ["PYTHONPYCACHEPREFIX"] = str(cache)
        del os.environ["PYTHONDONTWRITEBYTECODE"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of the longest tests (given a longer timeout) come first, then those of the
    slow ones, each in its order: with xdist handing out tests as workers run low
    (pyproject.toml) the short tests then fill the other workers around them, instead of a
    long test starting late and the run waiting for it."""
    rank: dict[Path, int] = {}
    for item in items:
        mark = (
            0 if item.get_closest_marker("timeout") else 1 if item.get_closest_marker("slow") else 2
        )
        rank[item.path] = min(mark, rank.get(item.path, 2))
    items.sort(key=lambda item: rank[item.path])


@pytest.fixture(scope="session")
def service() -> Iterator[LocalService]:
    with LocalService() as svc:
        yield svc


@pytest.fixture
def client(service: LocalService) -> Iterator[Client]:
    with Client(service.endpoint, service.project, key=service.key) as key_client:
        yield key_client


@pytest.fixture(scope="module")
def key_client(service: LocalService) -> Iterator[Client]:
    with service.client() as client:
        yield client


@pytest.fixture
def credentials(service: LocalService, monkeypatch: pytest.MonkeyPatch) -> None:
    """FRAMEPORT_ENDPOINT, _PROJECT and _KEY name the service (for the command line)."""
    monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
    monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
    monkeypatch.setenv("FRAMEPORT_KEY", service.key)
    monkeypatch.delenv("FRAMEPORT_JWT", raising=False)


@pytest.fixture
def async_client(service: LocalService) -> Iterator[AsyncClient]:
    key_client = AsyncClient(service.endpoint, service.project, key=service.key)
    yield key_client
    asyncio.run(key_client.close())


@dataclass(frozen=True)
class UserLogin:
    """A user created for a test, with the password to log in."""

    id: str
    email: str
    password: str


@pytest.fixture
def make_user(service: LocalService) -> Iterator[Callable[..., UserLogin]]:
    """`make_user(**fields)` creates a user through the Users API (API key) and returns its
    ID, e-mail and password; extra `fields` go into the create request (e.g. ``name=``)."""
    admin = Client(service.endpoint, service.project, key=service.key)

    def make(**fields: object) -> UserLogin:
        user_id = ID.unique()
        login = UserLogin(user_id, f"user-{user_id}@example.org", f"pw-{ID.unique()}")
        body = {"userId": user_id, "email": login.email, "password": login.password, **fields}
        admin._request("POST", "/users", json=body)
        return login

    yield make
    admin.close()


@pytest.fixture
def user_client(service: LocalService, make_user: Callable[..., UserLogin]) -> Iterator[Client]:
    login = make_user()
    with Client(service.endpoint, service.project) as client:
        client.login(login.email, login.password)
        yield client


LIVE_WAIT = 15.0
"""Seconds a test waits for a live table or a feed of changes before it fails."""


@pytest.fixture
def people(key_client: Client) -> Table:
    """An empty table that signed-in users may read."""
    schema = {"name": "string(20)", "age": "integer"}
    return key_client.create_table(
        new_id("live"), "people", schema=schema, permissions=['read("users")']
    )
