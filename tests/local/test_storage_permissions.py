"""Who may do what with files (service interface, "Permissions"): keys, signed-in users and guests,
with and without fileSecurity."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from storage_helpers import (
    assert_error,
    create_bucket,
    create_user,
    guest_client,
    key_client,
    session_client,
)

from frameport.local import LocalService

USER_BUCKET = ['read("users")', 'create("users")']


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService() as svc, key_client(svc) as admin:
        create_user(svc, "alice")
        create_user(svc, "bob")
        create_bucket(admin, "shared", permissions=USER_BUCKET)
        create_bucket(admin, "private", fileSecurity=True, permissions=['create("users")'])
        create_bucket(admin, "closed")
        yield svc


@pytest.fixture(scope="module")
def alice(service: LocalService) -> Iterator[httpx.Client]:
    with session_client(service, "alice") as client:
        yield client


@pytest.fixture(scope="module")
def bob(service: LocalService) -> Iterator[httpx.Client]:
    with session_client(service, "bob") as client:
        yield client


@pytest.fixture(scope="module")
def guest(service: LocalService) -> Iterator[httpx.Client]:
    with guest_client(service) as client:
        yield client


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        yield client


def put(client: httpx.Client, bucket: str, file_id: str, *permissions: str) -> httpx.Response:
    form: dict[str, object] = {"fileId": file_id}
    if permissions:
        form["permissions[]"] = list(permissions)
    return client.post(
        f"/storage/buckets/{bucket}/files", files={"file": (f"{file_id}.txt", b"x")}, data=form
    )


def file_path(bucket: str, file_id: str, suffix: str = "") -> str:
    return f"/storage/buckets/{bucket}/files/{file_id}{suffix}"


def listed(client: httpx.Client, bucket: str) -> list[str]:
    response = client.get(f"/storage/buckets/{bucket}/files")
    assert response.status_code == 200, response.text
    return sorted(item["$id"] for item in response.json()["files"])


def test_user_files_default_to_the_users_own_permissions(alice: httpx.Client) -> None:
    response = put(alice, "shared", "alice-default")
    assert response.status_code == 201
    assert response.json()["$permissions"] == [
        'read("user:alice")',
        'update("user:alice")',
        'delete("user:alice")',
    ]


def test_bucket_read_lets_every_user_read_every_file(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    put(alice, "shared", "alice-shared")

    assert bob.get(file_path("shared", "alice-shared")).status_code == 200
    assert bob.get(file_path("shared", "alice-shared", "/download")).content == b"x"
    assert "alice-shared" in listed(bob, "shared")


def test_without_file_security_file_permissions_do_not_count(
    alice: httpx.Client, guest: httpx.Client
) -> None:
    put(alice, "shared", "alice-update")
    update = alice.put(file_path("shared", "alice-update"), json={"name": "renamed.txt"})
    delete = alice.delete(file_path("shared", "alice-update"))

    assert_error(update, 401, "user_unauthorized")
    assert_error(delete, 401, "user_unauthorized")
    assert_error(guest.get(file_path("shared", "alice-update")), 401, "user_unauthorized")
    assert_error(guest.get("/storage/buckets/shared/files"), 401, "user_unauthorized")


def test_file_security_lets_the_files_permissions_decide(
    alice: httpx.Client, bob: httpx.Client, guest: httpx.Client, admin: httpx.Client
) -> None:
    put(alice, "private", "mine")
    put(alice, "private", "public", 'read("any")')

    assert alice.get(file_path("private", "mine")).status_code == 200
    assert_error(bob.get(file_path("private", "mine")), 404, "storage_file_not_found")
    assert_error(bob.get(file_path("private", "mine", "/download")), 404, "storage_file_not_found")
    assert_error(guest.get(file_path("private", "mine", "/view")), 404, "storage_file_not_found")
    assert guest.get(file_path("private", "public", "/download")).content == b"x"
    assert set(listed(alice, "private")) >= {"mine", "public"}
    assert listed(bob, "private") == listed(guest, "private") == ["public"]
    assert {"mine", "public"} <= set(listed(admin, "private"))


def test_file_security_update_and_delete_need_the_files_permission(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    put(alice, "private", "editable", 'read("users")', 'update("user:alice")')
    by_bob = bob.put(file_path("private", "editable"), json={"name": "bob.txt"})
    by_alice = alice.put(file_path("private", "editable"), json={"name": "alice.txt"})
    delete_by_alice = alice.delete(file_path("private", "editable"))

    assert_error(by_bob, 401, "user_unauthorized")
    assert by_alice.status_code == 200
    assert by_alice.json()["name"] == "alice.txt"
    assert_error(delete_by_alice, 401, "user_unauthorized")


def test_owner_deletes_and_the_bytes_are_gone(alice: httpx.Client, admin: httpx.Client) -> None:
    put(alice, "private", "doomed")
    assert alice.delete(file_path("private", "doomed")).status_code == 204
    assert_error(admin.get(file_path("private", "doomed")), 404, "storage_file_not_found")
    download = admin.get(file_path("private", "doomed", "/download"))
    assert_error(download, 404, "storage_file_not_found")


def test_users_may_only_grant_roles_they_hold_on_update(alice: httpx.Client) -> None:
    put(alice, "private", "regrant")
    own = alice.put(file_path("private", "regrant"), json={"permissions": ['read("users")']})
    foreign = alice.put(
        file_path("private", "regrant"), json={"permissions": ['read("team:staff")']}
    )

    assert own.json()["$permissions"] == ['read("users")']
    assert_error(foreign, 401, "user_unauthorized")


def test_keys_bypass_every_file_permission(admin: httpx.Client, alice: httpx.Client) -> None:
    put(alice, "private", "for-admin")
    update = admin.put(file_path("private", "for-admin"), json={"permissions": []})

    assert update.status_code == 200
    assert update.json()["$permissions"] == []
    assert admin.delete(file_path("private", "for-admin")).status_code == 204


def test_bucket_without_read_or_file_security_refuses_users(
    alice: httpx.Client, admin: httpx.Client
) -> None:
    put(admin, "closed", "hidden")
    assert_error(alice.get("/storage/buckets/closed/files"), 401, "user_unauthorized")
    assert_error(alice.get(file_path("closed", "hidden")), 401, "user_unauthorized")
    assert_error(put(alice, "closed", "nope"), 401, "user_unauthorized")


def test_guests_may_upload_where_any_may_create(admin: httpx.Client, guest: httpx.Client) -> None:
    create_bucket(admin, "dropbox", permissions=['create("any")'])
    response = put(guest, "dropbox", "anonymous")

    assert response.status_code == 201
    assert response.json()["$permissions"] == []
    assert_error(put(guest, "dropbox", "claimed", 'read("users")'), 401, "user_unauthorized")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/storage/buckets"),
        ("GET", "/storage/buckets"),
        ("GET", "/storage/buckets/shared"),
        ("PUT", "/storage/buckets/shared"),
        ("DELETE", "/storage/buckets/shared"),
    ],
)
def test_buckets_are_managed_with_a_key_only(
    alice: httpx.Client, guest: httpx.Client, method: str, path: str
) -> None:
    for caller in (alice, guest):
        response = caller.request(method, path, json={"bucketId": "x", "name": "x"})
        assert_error(response, 401, "general_unauthorized_scope")
