"""Retries under injected faults, reading back a create whose answer was lost, and proactive
throttling on rate-limit headers."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator

import pytest

from frameport import (
    ID,
    Client,
    FrameportError,
    RateLimitError,
    RetryPolicy,
    ServerError,
    TransportError,
)
from frameport.local import LocalService

SHORT_BACKOFF = RetryPolicy(backoff=0.01, backoff_max=0.1)


@pytest.fixture(scope="module")
def faulty_service() -> Iterator[LocalService]:
    with LocalService(faults="0.2:7") as svc:
        yield svc


def test_idempotent_calls_survive_injected_faults(faulty_service: LocalService) -> None:
    svc = faulty_service
    created: list[str] = []
    # The default retries with short backoffs: what is tested is that each call survives.
    with Client(svc.endpoint, svc.project, key=svc.key, retries=SHORT_BACKOFF) as client:
        for _ in range(30):
            user_id = ID.unique()
            user = client._request_json(
                "POST",
                "/users",
                json={"userId": user_id, "email": f"{user_id}@example.org"},
                idempotent=True,
                read_back=f"/users/{user_id}",
            )
            assert user["$id"] == user_id
            created.append(user_id)
        for index in range(40):
            user_id = created[index % len(created)]
            assert client._request_json("GET", f"/users/{user_id}")["$id"] == user_id
        for index, user_id in enumerate(created):
            labels = ["batch", f"n{index}"]
            answer = client._request_json(
                "PUT", f"/users/{user_id}/labels", json={"labels": labels}
            )
            assert answer["labels"] == labels
        listing = client._request_json("GET", "/users", params={"total": "true"})
    assert listing["total"] == len(created)
    kinds = Counter(fault.kind for fault in svc.faults)
    assert set(kinds) == {"drop", "500", "503", "429", "apply_then_drop"}, kinds
    lost_creates = [
        f for f in svc.faults if f.kind == "apply_then_drop" and f.request_line == "POST /v1/users"
    ]
    assert lost_creates, "no create was applied and then dropped: the read-back path went untested"


def test_non_idempotent_calls_are_retried_only_after_429() -> None:
    expected = {"500": ServerError, "503": ServerError, "429": RateLimitError}
    with (
        LocalService(faults="1.0:2") as svc,
        Client(svc.endpoint, svc.project, key=svc.key) as client,
    ):
        for _ in range(5):
            before = len(svc.faults)
            with pytest.raises(FrameportError) as caught:
                client._request("POST", "/users", json={"userId": ID.unique()})
            consumed = [fault.kind for fault in svc.faults[before:]]
            *retried, last = consumed
            assert all(kind == "429" for kind in retried), consumed
            assert type(caught.value) is expected.get(last, TransportError), consumed


def test_throttle_waits_for_the_next_window_instead_of_a_429(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limit, window = 5, 2
    overrides = {"POST /v1/account/jwts": (limit, window)}
    with LocalService(rate_limit_overrides=overrides) as svc:
        email, password = f"{ID.unique()}@example.org", "password-123"
        with Client(svc.endpoint, svc.project, key=svc.key) as admin:
            admin._request(
                "POST", "/users", json={"userId": ID.unique(), "email": email, "password": password}
            )
        with Client(svc.endpoint, svc.project) as client:
            client.login(email, password)
            caplog.set_level(logging.DEBUG, logger="frameport")
            tokens = [client.create_jwt() for _ in range(3 * limit)]
    assert len(set(tokens)) >= 1
    sent = [r for r in caplog.records if getattr(r, "http_path", None) == "/v1/account/jwts"]
    assert [getattr(r, "http_status", None) for r in sent] == [201] * (3 * limit)
    per_window = Counter(getattr(r, "rate_limit_reset", None) for r in sent)
    assert None not in per_window
    assert max(per_window.values()) <= limit, per_window
    assert len(per_window) >= 3
    assert any("rate limit spent" in r.getMessage() for r in caplog.records)
