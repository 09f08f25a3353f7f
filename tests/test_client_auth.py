"""Authentication against the local service: API key, sessions (cookie pair, fallback cookies),
JWTs, impersonation, the saved-session file and configuration from the environment."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from frameport import (
    AuthenticationError,
    Client,
    ImpersonationIgnoredWarning,
    NotFoundError,
    PermissionDeniedError,
)
from frameport._core._auth import Session, credential_file, session_cookie_names
from frameport.local import LocalService

MakeUser = Callable[..., Any]  # conftest.make_user


@pytest.fixture
def session_client(service: LocalService) -> Iterator[Client]:
    with Client(service.endpoint, service.project) as anonymous:
        yield anonymous


def _session_of(client: Client) -> Session:
    session = client._async._credentials.session
    assert session is not None
    return session


def test_api_key_client_can_call_key_only_endpoints(client: Client, make_user: MakeUser) -> None:
    user = make_user()
    assert client.authentication == "key"
    assert client._request_json("GET", f"/users/{user.id}")["email"] == user.email


def test_anonymous_client_is_a_guest(session_client: Client) -> None:
    assert session_client.authentication is None
    with pytest.raises(AuthenticationError) as caught:
        session_client.account()
    assert caught.value.type == "general_unauthorized_scope"


def test_login_keeps_both_session_cookies(session_client: Client, make_user: MakeUser) -> None:
    user = make_user()
    record = session_client.login(user.email, user.password)
    assert record["userId"] == user.id
    assert session_client.authentication == "session"
    names = session_cookie_names(session_client.project)
    assert set(_session_of(session_client).cookies) == set(names)
    assert session_client.account()["$id"] == user.id


@pytest.mark.parametrize("kept", [0, 1])
def test_each_session_cookie_alone_authenticates(
    session_client: Client, make_user: MakeUser, kept: int
) -> None:
    user = make_user()
    session_client.login(user.email, user.password)
    session = _session_of(session_client)
    name = session_cookie_names(session_client.project)[kept]
    only_one = Session({name: session.cookies[name]})
    session_client._async._credentials = replace(
        session_client._async._credentials, session=only_one
    )
    assert session_client.account()["$id"] == user.id


def test_wrong_password_is_an_authentication_error(
    session_client: Client, make_user: MakeUser
) -> None:
    user = make_user()
    with pytest.raises(AuthenticationError) as caught:
        session_client.login(user.email, user.password + "x")
    assert caught.value.type == "user_invalid_credentials"
    assert session_client.authentication is None


def test_fallback_cookies_are_kept_and_sent_back(
    service: LocalService, make_user: MakeUser
) -> None:
    user = make_user()
    cross_site = {"Origin": "https://notebook.example.org"}
    with Client(service.endpoint, service.project, headers=cross_site) as browser_like:
        browser_like.login(user.email, user.password)
        session = _session_of(browser_like)
        assert session.fallback is not None
        cookie_name = session_cookie_names(service.project)[0]
        assert json.loads(session.fallback.reveal()) == {
            cookie_name: session.cookies[cookie_name].reveal()
        }
        # Without any cookie, the X-Fallback-Cookies header alone identifies the session.
        fallback_only = Session({}, session.fallback)
        credentials = replace(browser_like._async._credentials, session=fallback_only)
        browser_like._async._credentials = credentials
        assert browser_like.account()["$id"] == user.id
        browser_like.logout()  # the service answers X-Fallback-Cookies: [] and clears cookies
        assert browser_like.authentication is None


def test_same_site_login_gets_no_fallback_cookies(
    session_client: Client, make_user: MakeUser
) -> None:
    user = make_user()
    session_client.login(user.email, user.password)
    assert _session_of(session_client).fallback is None


def test_logout_ends_the_session_on_the_service(
    session_client: Client, make_user: MakeUser
) -> None:
    user = make_user()
    session_client.login(user.email, user.password)
    old_session = _session_of(session_client)
    session_client.logout()
    assert session_client.authentication is None
    with pytest.raises(AuthenticationError):
        session_client.account()
    # The old cookies no longer work either: the session was deleted, not just forgotten.
    credentials = replace(session_client._async._credentials, session=old_session)
    session_client._async._credentials = credentials
    with pytest.raises(AuthenticationError):
        session_client.account()


def test_logout_without_a_session_is_a_usage_error(session_client: Client) -> None:
    with pytest.raises(ValueError, match="login"):
        session_client.logout()


def test_login_on_a_key_client_is_a_usage_error(client: Client) -> None:
    with pytest.raises(ValueError, match="without key="):
        client.login("a@example.org", "password")


def test_jwt_client_acts_as_the_user(
    service: LocalService, session_client: Client, make_user: MakeUser
) -> None:
    user = make_user()
    session_client.login(user.email, user.password)
    token = session_client.create_jwt()
    with Client(service.endpoint, service.project, jwt=token) as jwt_client:
        assert jwt_client.authentication == "jwt"
        assert jwt_client.account()["$id"] == user.id
        with pytest.raises(PermissionDeniedError) as caught:
            jwt_client.create_jwt()
        assert caught.value.type == "user_jwt_creation_denied"


def test_expired_jwt_is_an_authentication_error(
    service: LocalService, session_client: Client, make_user: MakeUser
) -> None:
    user = make_user()
    session_client.login(user.email, user.password)
    token = session_client.create_jwt(duration=1)
    service.advance_clock(2)  # past the JWT's one second, on the service's clock
    jwt_client = Client(service.endpoint, service.project, jwt=token)
    with jwt_client, pytest.raises(AuthenticationError) as caught:
        jwt_client.account()
    assert caught.value.type == "user_jwt_invalid"


def test_create_jwt_checks_duration(session_client: Client) -> None:
    with pytest.raises(ValueError, match="3600"):
        session_client.create_jwt(duration=3601)
    with pytest.raises(TypeError):
        session_client.create_jwt(duration=1.5)  # type: ignore[arg-type]


def test_impersonator_sees_the_target_account(
    client: Client, session_client: Client, make_user: MakeUser
) -> None:
    impersonator, target = make_user(), make_user()
    client._request("PATCH", f"/users/{impersonator.id}/impersonator", json={"impersonator": True})
    session_client.login(impersonator.email, impersonator.password)
    for acting in (
        session_client.impersonate(user_id=target.id),
        session_client.impersonate(email=target.email),
    ):
        account = acting.account()
        assert account["$id"] == target.id
        assert account["impersonatorUserId"] == impersonator.id
        acting.close()  # leaves the shared connections open for its parent
    assert session_client.account()["$id"] == impersonator.id


def test_impersonation_through_a_jwt(
    service: LocalService, client: Client, session_client: Client, make_user: MakeUser
) -> None:
    impersonator, target = make_user(), make_user()
    client._request("PATCH", f"/users/{impersonator.id}/impersonator", json={"impersonator": True})
    session_client.login(impersonator.email, impersonator.password)
    with Client(service.endpoint, service.project, jwt=session_client.create_jwt()) as jwt_client:
        assert jwt_client.impersonate(user_id=target.id).account()["$id"] == target.id


def test_a_user_who_is_not_an_impersonator_stays_himself(
    session_client: Client, make_user: MakeUser
) -> None:
    plain, target = make_user(), make_user()
    session_client.login(plain.email, plain.password)
    assert session_client.impersonate(user_id=target.id).account()["$id"] == plain.id


def test_impersonate_with_a_plain_key_warns(client: Client, make_user: MakeUser) -> None:
    target = make_user()
    with pytest.warns(ImpersonationIgnoredWarning, match="ignores impersonation"):
        acting = client.impersonate(user_id=target.id)
    assert acting.authentication == "key"


@pytest.mark.parametrize(
    "arguments", [{}, {"user_id": "a", "email": "b@example.org"}, {"phone": "+1", "email": "x"}]
)
def test_impersonate_takes_exactly_one_target(
    session_client: Client, arguments: dict[str, str]
) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        session_client.impersonate(**arguments)


@pytest.fixture
def config_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    directory = tmp_path / "config"
    monkeypatch.setenv("FRAMEPORT_CONFIG_DIR", str(directory))
    return directory


def test_saved_session_round_trip(
    service: LocalService, config_dir: Path, make_user: MakeUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = make_user()
    monkeypatch.chdir(config_dir.parent)
    with Client(service.endpoint, service.project) as first:
        first.login(user.email, user.password, save=True)
        cookie = _session_of(first).cookies[session_cookie_names(service.project)[0]].reveal()
    path = credential_file()
    assert path.parent == config_dir
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(config_dir.stat().st_mode) == 0o700
    text = path.read_text()
    assert cookie in text
    assert user.password not in text
    assert sorted(p.name for p in config_dir.parent.iterdir()) == ["config"]

    with Client.from_saved(service.endpoint + "/", service.project) as restored:
        assert restored.authentication == "session"
        assert restored.account()["$id"] == user.id
        restored.logout()
    assert json.loads(path.read_text())["sessions"] == {}
    with pytest.raises(ValueError, match="save=True"):
        Client.from_saved(service.endpoint, service.project)


def test_from_env(
    monkeypatch: pytest.MonkeyPatch, service: LocalService, make_user: MakeUser
) -> None:
    user = make_user()
    monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
    monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
    monkeypatch.setenv("FRAMEPORT_KEY", service.key)
    monkeypatch.delenv("FRAMEPORT_JWT", raising=False)
    with Client.from_env(retries=2) as from_env:
        assert from_env.authentication == "key"
        assert from_env._request_json("GET", f"/users/{user.id}")["$id"] == user.id
    monkeypatch.delenv("FRAMEPORT_PROJECT")
    with pytest.raises(ValueError, match="FRAMEPORT_PROJECT"):
        Client.from_env()


def test_wrong_project_is_not_found(service: LocalService) -> None:
    stray = Client(service.endpoint, "no-such-project", key=service.key)
    with stray, pytest.raises(NotFoundError) as caught:
        stray._request("GET", "/users")
    assert caught.value.type == "project_not_found"
