"""The sync client after a fork, JWT hints, and credentials from the environment."""

from __future__ import annotations

import multiprocessing
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


_forked_client: Client | None = None


def _count_in_child(table_ids: tuple[str, str]) -> int:
    assert _forked_client is not None
    return _forked_client.table(*table_ids).count()


def test_a_used_sync_client_works_in_forked_children(
    service: LocalService, table_ids: tuple[str, str]
) -> None:
    global _forked_client
    with service.client() as client:
        assert client.table(*table_ids).count() == 10  # the pool and loop now exist
        _forked_client = client
        try:
            with multiprocessing.get_context("fork").Pool(2) as pool:
                assert pool.map(_count_in_child, [table_ids] * 3) == [10, 10, 10]
        finally:
            _forked_client = None
        assert client.table(*table_ids).count() == 10  # the parent's pool is untouched


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
