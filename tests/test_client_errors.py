"""Every error class, triggered for real by the local service; and no secret in any repr,
exception or log record."""

from __future__ import annotations

import logging
import pickle
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from frameport import (
    ID,
    APIError,
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    Client,
    ConflictError,
    FrameportError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RetryPolicy,
    ServerError,
    TransportError,
)
from frameport._core._transport import unreachable_hint
from frameport._exceptions import api_error_class
from frameport.local import LocalService

MakeUser = Callable[..., Any]  # conftest.make_user
NO_RETRIES = RetryPolicy(retries=0)


def test_bad_request(client: Client) -> None:
    with pytest.raises(BadRequestError) as caught:
        client._request("POST", "/users", json={"userId": "-starts-with-dash"})
    error = caught.value
    assert (error.status, error.type, error.method) == (400, "general_argument_invalid", "POST")
    assert error.url.endswith("/v1/users")
    assert "userId" in error.message
    assert isinstance(error, APIError) and isinstance(error, FrameportError)


def test_authentication_error_for_a_guest(service: LocalService) -> None:
    guest = Client(service.endpoint, service.project)
    with guest, pytest.raises(AuthenticationError) as caught:
        guest.account()
    assert (caught.value.status, caught.value.type) == (401, "general_unauthorized_scope")


def test_permission_denied_for_a_blocked_user(
    service: LocalService, client: Client, make_user: MakeUser
) -> None:
    user = make_user()
    client._request("PATCH", f"/users/{user.id}/status", json={"status": False})
    blocked = Client(service.endpoint, service.project)
    with blocked, pytest.raises(PermissionDeniedError) as caught:
        blocked.login(user.email, user.password)
    assert (caught.value.status, caught.value.type) == (403, "user_blocked")


def test_not_found(client: Client) -> None:
    with pytest.raises(NotFoundError) as caught:
        client._request("GET", f"/users/{ID.unique()}")
    assert (caught.value.status, caught.value.type) == (404, "user_not_found")
    with pytest.raises(NotFoundError) as route:
        client._request("GET", "/no/such/route")
    assert route.value.type == "general_route_not_found"


def test_conflict(client: Client) -> None:
    user_id = ID.unique()
    client._request("POST", "/users", json={"userId": user_id})
    with pytest.raises(ConflictError) as caught:
        client._request("POST", "/users", json={"userId": user_id})
    assert (caught.value.status, caught.value.type) == (409, "user_already_exists")


def test_statuses_without_their_own_class_are_api_errors() -> None:
    assert api_error_class(412) is APIError
    assert api_error_class(416) is APIError
    assert api_error_class(501) is ServerError
    assert api_error_class(429) is RateLimitError


@pytest.fixture(scope="module")
def limited_service() -> Iterator[LocalService]:
    overrides = {"POST /v1/account/sessions/email": (1, 86400)}
    with LocalService(rate_limit_overrides=overrides) as svc:
        yield svc


def test_rate_limit_error_from_the_service(limited_service: LocalService) -> None:
    svc = limited_service
    email = f"{ID.unique()}@example.org"
    with Client(svc.endpoint, svc.project, key=svc.key) as admin:
        admin._request("POST", "/users", json={"userId": ID.unique(), "email": email})
    first = Client(svc.endpoint, svc.project, retries=NO_RETRIES)
    with first, pytest.raises(AuthenticationError):
        first.login(email, "wrong password")
    second = Client(svc.endpoint, svc.project, retries=NO_RETRIES)  # knows nothing of the limit
    with second, pytest.raises(RateLimitError) as caught:
        second.login(email, "wrong password")
    error = caught.value
    assert (error.status, error.type) == (429, "general_rate_limit_exceeded")
    assert error.retry_after is not None and error.retry_after > 0


def test_spent_rate_limit_is_refused_before_sending(limited_service: LocalService) -> None:
    svc = limited_service
    email = f"{ID.unique()}@example.org"
    impatient = RetryPolicy(retries=0, max_wait=0)
    with Client(svc.endpoint, svc.project, retries=impatient) as client:
        with pytest.raises(AuthenticationError):
            client.login(email, "wrong password")  # the answer says: 0 remaining
        with pytest.raises(RateLimitError, match="try again later"):
            client.login(email, "wrong password")


def test_injected_faults_map_to_their_error_classes() -> None:
    with LocalService(faults="1.0:2") as svc:
        with Client(svc.endpoint, svc.project, key=svc.key, retries=NO_RETRIES) as client:
            outcomes: list[FrameportError] = []
            for _ in range(12):
                with pytest.raises(FrameportError) as caught:
                    client._request("GET", "/users")
                outcomes.append(caught.value)
        faults = svc.faults
    assert len(faults) == len(outcomes)
    expected: dict[str, type[FrameportError]] = {
        "500": ServerError,
        "503": ServerError,
        "429": RateLimitError,
        "drop": TransportError,
        "apply_then_drop": TransportError,
    }
    for fault, error in zip(faults, outcomes, strict=True):
        assert type(error) is expected[fault.kind], (fault, error)
        if isinstance(error, APIError):
            assert error.status == int(fault.kind)
    assert {fault.kind for fault in faults} == set(expected)
    rate_limited = [e for e in outcomes if isinstance(e, RateLimitError)]
    assert all(e.retry_after == 1 for e in rate_limited)


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_connection_refused_is_a_transport_error() -> None:
    policy = RetryPolicy(retries=2, backoff=0.01)
    endpoint = f"http://127.0.0.1:{_unused_port()}/v1"
    client = Client(endpoint, "demo", key="k-secret", retries=policy)
    with client, pytest.raises(TransportError) as caught:
        client._request("GET", "/users")
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert caught.value.method == "GET"
    assert "k-secret" not in str(caught.value)


def test_a_closed_port_fails_at_once_and_says_how_to_start_a_service() -> None:
    port = _unused_port()
    endpoint = f"http://127.0.0.1:{port}/v1"
    with Client(endpoint, "demo") as client, pytest.raises(TransportError) as caught:
        client.table("crm", "people").to_pandas(progress=False)
    error = caught.value
    assert error.attempts == 1  # refused: not retried (the default policy allows five)
    assert str(error).startswith(f"GET {endpoint}/tablesdb/crm/tables/people failed after 1 ")
    assert error.hint == (
        f"Is the service running at {endpoint} (the connection was refused)? "
        f"Start a local one with `frameport serve --port {port}`."
    )
    assert str(error).endswith(error.hint)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.attempts, copy.hint, str(copy)) == (1, error.hint, str(error))


def test_the_default_port_needs_no_port_option() -> None:
    assert unreachable_hint("http://localhost:8080/v1", refused=True).endswith(
        "Start a local one with `frameport serve`."
    )
    remote = unreachable_hint("https://service.example.org/v1", refused=False)
    assert remote == (
        "Is the service running at https://service.example.org/v1 (no connection could be "
        "made)? Check the endpoint and the network."
    )


def test_an_unanswered_request_is_retried_and_its_attempts_counted() -> None:
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        policy = RetryPolicy(retries=1, backoff=0.0)
        client = Client(endpoint, "demo", timeout=0.3, retries=policy)
        with client, pytest.raises(TransportError) as caught:
            client._request("GET", "/users")
    assert caught.value.attempts == 2
    assert "failed after 2 attempts: ReadTimeout" in str(caught.value)
    assert caught.value.hint is None  # connected: the service is there, but silent


def test_read_timeout_is_a_transport_error() -> None:
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        client = Client(endpoint, "demo", timeout=0.3, retries=NO_RETRIES)
        with client, pytest.raises(TransportError) as caught:
            client._request("GET", "/users")
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)


def test_no_secret_in_reprs_errors_or_logs(
    service: LocalService, make_user: MakeUser, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    user = make_user()
    seen: list[object] = []
    with Client(service.endpoint, service.project, key=service.key) as key_client:
        seen += [key_client, key_client._async, key_client._async._credentials]
        with pytest.raises(NotFoundError) as missing:
            key_client._request("GET", "/users/nobody", params={"token": "resource-token"})
        seen.append(missing.value)
        with pytest.warns(UserWarning):
            seen.append(key_client.impersonate(user_id=user.id))
    with Client(service.endpoint, service.project) as session_client:
        with pytest.raises(AuthenticationError) as wrong:
            session_client.login(user.email, "not-" + user.password)
        seen.append(wrong.value)
        session_client.login(user.email, user.password)
        session = session_client._async._credentials.session
        assert session is not None
        cookies = [value.reveal() for value in session.cookies.values()]
        token = session_client.create_jwt()
        seen += [session_client, session_client._async._credentials, session]
        with Client(service.endpoint, service.project, jwt=token) as jwt_client:
            seen.append(jwt_client)
            with pytest.raises(PermissionDeniedError) as denied:
                jwt_client.create_jwt()
            seen.append(denied.value)
        session_client.logout()
    secrets = [service.key, user.password, "not-" + user.password, token, "resource-token"]
    secrets += cookies
    texts = [repr(obj) for obj in seen] + [str(obj) for obj in seen]
    texts += [repr(e.args) for e in seen if isinstance(e, BaseException)]
    assert caplog.records, "the frameport logger recorded nothing"
    texts += [record.getMessage() for record in caplog.records]
    texts += [repr(vars(record)) for record in caplog.records]
    for secret in secrets:
        leaks = [text for text in texts if secret in text]
        assert not leaks, leaks
    logged = [
        (getattr(r, "http_path", None), getattr(r, "http_status", None)) for r in caplog.records
    ]
    assert ("/v1/users/nobody?token=***", 404) in logged


def test_async_client_repr_hides_the_key(service: LocalService) -> None:
    async_client = AsyncClient(service.endpoint, service.project, key="very-secret-key")
    assert "very-secret-key" not in repr(async_client)
    assert "authentication='key'" in repr(async_client)


def test_errors_survive_pickling(client: Client) -> None:
    import pickle

    with pytest.raises(NotFoundError) as caught:
        client._request("GET", "/users/nobody")
    copies = [
        pickle.loads(pickle.dumps(error))
        for error in (
            caught.value,
            RateLimitError("slow down", status=429, type="t", method="GET", url="u", retry_after=2),
            TransportError("dropped", method="GET", url="http://h/v1/x"),
        )
    ]
    assert str(copies[0]) == str(caught.value) and copies[0].type == "user_not_found"
    assert copies[1].retry_after == 2
    assert (copies[2].method, str(copies[2])) == ("GET", "dropped")
