"""Errors whose likely cause is the client's own setting say so: an endpoint without /v1,
no credentials at all, and an API key the service does not know (it treats such a key as a guest:
service interface, "Authentication")."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from frameport import ID, APIError, AuthenticationError, Client, NotFoundError
from frameport.local import LocalService

WRONG_KEY = "standard_0123456789abcdef-not-a-key-of-this-project"


@pytest.fixture(scope="module")
def table_ids(service: LocalService) -> tuple[str, str]:
    with service.client() as client:
        table = client.create_table(ID.unique(), ID.unique(), schema={"n": "integer"})
    return table.database_id, table.id


@pytest.fixture
def wrong_key_client(service: LocalService) -> Iterator[Client]:
    with Client(service.endpoint, service.project, key=WRONG_KEY) as client:
        yield client


def _raised(call: Callable[[], Any]) -> APIError:
    with pytest.raises(APIError) as caught:
        call()
    return caught.value


def test_an_endpoint_without_v1_says_the_endpoint_ends_in_v1(
    service: LocalService, table_ids: tuple[str, str]
) -> None:
    root = service.endpoint.removesuffix("/v1")
    with Client(root, service.project, key=service.key) as client:
        for call in (lambda: client.table(*table_ids).count(), client.account):
            error = _raised(call)
            assert isinstance(error, NotFoundError)
            assert error.type == "general_route_not_found"
            assert error.message == "The requested route was not found."  # the service's own
            assert error.hint is not None and f"(e.g. {root}/v1)" in error.hint
            assert "should end in /v1" in str(error) and f"{root}/v1" in str(error)
            assert service.key not in str(error) + repr(error)


def test_an_unknown_route_at_a_v1_endpoint_gets_no_endpoint_hint(client: Client) -> None:
    error = _raised(lambda: client._request("GET", "/no/such/route"))
    assert error.type == "general_route_not_found"
    assert error.hint is None and "/v1 (e.g." not in str(error)


def test_a_wrong_key_says_the_key_may_be_wrong_and_never_shows_it(
    service: LocalService, wrong_key_client: Client, table_ids: tuple[str, str]
) -> None:
    refused_rows = _raised(lambda: wrong_key_client.table(*table_ids).count())
    refused_scope = _raised(wrong_key_client.account)
    assert (refused_rows.status, refused_rows.type) == (401, "user_unauthorized")
    assert (refused_scope.status, refused_scope.type) == (401, "general_unauthorized_scope")
    assert "(role: guests)" in refused_scope.message
    for error in (refused_rows, refused_scope):
        assert isinstance(error, AuthenticationError)
        assert "API key it does not know as a guest" in str(error)
        assert f"belongs to project {service.project!r}" in str(error)
        shown = str(error) + repr(error) + str(pickle.loads(pickle.dumps(error)))
        assert WRONG_KEY not in shown and "0123456789abcdef" not in shown


def test_the_key_hint_survives_pickling(wrong_key_client: Client) -> None:
    error = _raised(wrong_key_client.account)
    copy = pickle.loads(pickle.dumps(error))
    assert copy.hint == error.hint and str(copy) == str(error)


def test_a_client_without_credentials_is_told_how_to_give_a_key(
    service: LocalService, monkeypatch: pytest.MonkeyPatch, table_ids: tuple[str, str]
) -> None:
    monkeypatch.delenv("FRAMEPORT_KEY", raising=False)
    monkeypatch.delenv("FRAMEPORT_JWT", raising=False)
    with Client(service.endpoint, service.project) as guest:
        refused = [_raised(call) for call in (guest.account, guest.table(*table_ids).count)]
    assert [error.type for error in refused] == ["general_unauthorized_scope", "user_unauthorized"]
    for error in refused:
        assert isinstance(error, AuthenticationError) and error.hint is not None
        assert "key=..." in error.hint and "FRAMEPORT_KEY" in error.hint
        assert "FRAMEPORT_KEY" in str(error) and "does not know" not in str(error)
        assert service.key not in str(error) + repr(error)


def test_signed_in_users_get_no_key_hint(
    service: LocalService, make_user: Callable[..., Any]
) -> None:
    user = make_user()
    with Client(service.endpoint, service.project) as signed_in:
        signed_in.login(user.email, user.password)
        refused = _raised(lambda: signed_in.create_bucket(ID.unique(), "b"))
    assert refused.status == 401 and "(role: users)" in refused.message
    assert refused.hint is None and "API key" not in str(refused)


def test_a_valid_key_gets_no_hint_for_a_missing_resource(client: Client) -> None:
    error = _raised(lambda: client.bucket(ID.unique()).get(ID.unique()))
    assert error.status == 404 and error.hint is None
