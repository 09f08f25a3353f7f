"""The sync client after a fork, JWT hints, and credentials from the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from frameport import ID, AuthenticationError, Client
from frameport.local import LocalService


@pytest.fixture(scope="module")
def table_ids(service: LocalService) -> tuple[str, str]:
    with service.client() as client:
        table = client.create_table(ID.unique(), ID.unique(), schema={"n": "integer"})
        table.insert(pd.DataFrame({"n": range(10)}), progress=False)
    return table.database_id, table.id


# Run in a fresh interpreter: the test's own process may hold other libraries' threads
# (a Ray driver's, say) that a fork would copy mid-lock.
FORKING_SCRIPT = """
import multiprocessing, os, sys
import frameport as fp

endpoint, project, database, table = sys.argv[1:]
client = fp.Client(endpoint, project, key=os.environ["FRAMEPORT_KEY"])
assert client.table(database, table).count() == 10  # the pool and loop now exist


def count_in_child(_: int) -> int:
    return client.table(database, table).count()


with multiprocessing.get_context("fork").Pool(2) as pool:
    print(pool.map(count_in_child, range(3)))
print(client.table(database, table).count())  # the parent's pool is untouched
client.close()
"""


def test_a_used_sync_client_works_in_forked_children(
    service: LocalService, table_ids: tuple[str, str]
) -> None:
    arguments = [service.endpoint, service.project, *table_ids]
    done = subprocess.run(
        [sys.executable, "-c", FORKING_SCRIPT, *arguments],
        env={**os.environ, "FRAMEPORT_KEY": service.key},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[10, 10, 10]", "10"]


def _jwt_error(call: Callable[[], Any]) -> AuthenticationError:
    with pytest.raises(AuthenticationError) as caught:
        call()
    return caught.value


def test_an_expired_or_foreign_jwt_says_to_make_a_new_one(
    service: LocalService, user_client: Client
) -> None:
    short = user_client.create_jwt(duration=1)
    service.advance_clock(2)  # past the JWT's one second, on the service's clock
    for jwt in (short, "not.a.jwt"):
        with Client(service.endpoint, service.project, jwt=jwt) as client:
            error = _jwt_error(client.account)
        assert error.type == "user_jwt_invalid"
        assert error.hint is not None and "create_jwt()" in error.hint
        assert jwt not in str(error) + repr(error)


def test_a_jwt_of_an_ended_session_says_so(service: LocalService, user_client: Client) -> None:
    jwt = user_client.create_jwt()
    user_client.logout()
    with Client(service.endpoint, service.project, jwt=jwt) as client:
        error = _jwt_error(client.account)
    assert "(role: guests)" in error.message
    assert error.hint is not None and "session it was made from has ended" in error.hint


def test_a_signed_in_jwt_refused_a_row_gets_no_session_hint(
    service: LocalService, user_client: Client, table_ids: tuple[str, str]
) -> None:
    with Client(service.endpoint, service.project, jwt=user_client.create_jwt()) as client:
        error = _jwt_error(lambda: client.table(*table_ids).count())
    assert error.type == "user_unauthorized" and error.hint is None


def test_from_env_prefers_the_key_and_honours_explicit_credentials(
    service: LocalService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
    monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
    monkeypatch.setenv("FRAMEPORT_KEY", service.key)
    monkeypatch.setenv("FRAMEPORT_JWT", "a.b.c")
    with Client.from_env() as from_env:  # as the CLI, fsspec and dask workers do
        assert from_env.authentication == "key"
    with Client.from_env(key=service.key) as by_key, Client.from_env(jwt="x.y.z") as by_jwt:
        assert (by_key.authentication, by_jwt.authentication) == ("key", "jwt")
    monkeypatch.delenv("FRAMEPORT_KEY")
    with Client.from_env() as from_env:
        assert from_env.authentication == "jwt"
