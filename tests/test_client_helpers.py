"""ID, Permission and Role helpers, query encoding, URL redaction, settings validation."""

from __future__ import annotations

import re
import ssl
from pathlib import Path

import certifi
import httpx
import pytest

from frameport import ID, AsyncClient, Client, Permission, RetryPolicy, Role
from frameport._core._auth import config_dir
from frameport._core._transport import _ssl_context, queries_param, redact_url


def test_unique_ids_have_the_service_format_and_are_time_ordered() -> None:
    ids = [ID.unique() for _ in range(2000)]
    assert all(re.fullmatch(r"[0-9a-f]{20}", i) for i in ids)
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_unique_id_time_part_is_the_current_second() -> None:
    import time

    before = int(time.time())
    seconds = int(ID.unique()[:8], 16)
    assert before <= seconds <= int(time.time())


@pytest.mark.parametrize("good", ["a", "A1", "0.b-c_d", "x" * 36, "row.2024-01_x"])
def test_custom_id_accepts_valid(good: str) -> None:
    assert ID.custom(good) == good


@pytest.mark.parametrize("bad", ["", ".a", "-a", "_a", "x" * 37, "a b", "a/b", "é", "a\n"])
def test_custom_id_rejects_invalid_with_a_hint(bad: str) -> None:
    with pytest.raises(ValueError, match=r"ID\.unique"):
        ID.custom(bad)


def test_custom_id_rejects_non_strings() -> None:
    with pytest.raises(TypeError):
        ID.custom(5)  # type: ignore[arg-type]


def test_role_strings() -> None:
    assert Role.any() == "any"
    assert Role.guests() == "guests"
    assert Role.users() == "users"
    assert Role.users("verified") == "users/verified"
    assert Role.user("u1") == "user:u1"
    assert Role.user("u1", "unverified") == "user:u1/unverified"
    assert Role.team("t1") == "team:t1"
    assert Role.team("t1", "owner") == "team:t1/owner"
    assert Role.member("m1") == "member:m1"


def test_permission_strings() -> None:
    assert Permission.read(Role.any()) == 'read("any")'
    assert Permission.create(Role.users()) == 'create("users")'
    assert Permission.update(Role.user("u1")) == 'update("user:u1")'
    assert Permission.delete(Role.team("t", "admin")) == 'delete("team:t/admin")'
    assert Permission.write(Role.member("m")) == 'write("member:m")'


def test_role_parts_must_be_non_empty_strings() -> None:
    with pytest.raises(ValueError):
        Role.user("")
    with pytest.raises(TypeError):
        Role.team(3)  # type: ignore[arg-type]


def test_queries_param_encodes_compact_json_under_bracket_name() -> None:
    params = queries_param([{"method": "equal", "column": "name", "values": ["Å"]}, "raw"])
    expected = '{"method":"equal","column":"name","values":["Å"]}'
    assert params == {"queries[]": [expected, "raw"]}
    url = httpx.URL("http://h/v1/rows", params=params)
    assert url.query.decode().count("queries%5B%5D=") == 2


def test_redact_url_masks_secret_params_and_user_info() -> None:
    url = "http://bob:pw@h:8080/v1/files/x/view?project=demo&token=abc&key=k1&width=5"
    redacted = redact_url(url)
    assert redacted == "http://h:8080/v1/files/x/view?project=demo&token=***&key=***&width=5"
    assert (
        redact_url(url, origin=False) == "/v1/files/x/view?project=demo&token=***&key=***&width=5"
    )


def test_query_member_defaults_by_interface_and_can_be_forced() -> None:
    client = AsyncClient("http://127.0.0.1:1/v1", "demo")
    assert client.query_member is None
    assert client.query_member_for("/tablesdb/db/tables/t/rows") == "column"
    assert client.query_member_for("/databases/db/collections/c/documents") == "attribute"
    forced = AsyncClient("http://127.0.0.1:1/v1", "demo", query_member="attribute")
    assert forced.query_member_for("/tablesdb/db/tables/t/rows") == "attribute"
    with pytest.raises(ValueError):
        AsyncClient("http://127.0.0.1:1/v1", "demo", query_member="field")


def test_browser_url_carries_the_project_and_never_a_credential() -> None:
    client = Client("http://127.0.0.1:1/v1/", "demo", key="secret-key")
    url = client.browser_url("/storage/buckets/b/files/f/preview", {"width": 64})
    assert url == "http://127.0.0.1:1/v1/storage/buckets/b/files/f/preview?project=demo&width=64"
    assert "secret-key" not in url
    with pytest.raises(ValueError, match="Credentials never go in a URL"):
        client.browser_url("/x", {"key": "k"})


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"endpoint": "ftp://h/v1"}, ValueError),
        ({"endpoint": "http://user:pw@h/v1"}, ValueError),
        ({"project": ""}, ValueError),
        ({"key": "k", "jwt": "j"}, ValueError),
        ({"timeout": 0}, ValueError),
        ({"timeout": float("inf")}, ValueError),
        ({"timeout": httpx.Timeout(None)}, ValueError),
        ({"timeout": "5"}, TypeError),
        ({"retries": -1}, ValueError),
    ],
)
def test_constructor_rejects_usage_mistakes(kwargs: dict[str, object], error: type) -> None:
    arguments: dict[str, object] = {"endpoint": "http://127.0.0.1:1/v1", "project": "demo"}
    arguments.update(kwargs)
    with pytest.raises(error):
        Client(**arguments)  # type: ignore[arg-type]


def test_retry_policy_backoff_is_bounded_jitter() -> None:
    policy = RetryPolicy(retries=3, backoff=0.5, backoff_max=1.5)
    delays = [policy.backoff_delay(n) for n in range(6) for _ in range(50)]
    assert all(0 <= d <= 1.5 for d in delays)
    assert len(set(delays)) > 1


def test_config_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FRAMEPORT_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert config_dir() == tmp_path / "home" / ".config" / "frameport"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")  # ignored: not absolute
    assert config_dir() == tmp_path / "home" / ".config" / "frameport"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_dir() == tmp_path / "xdg" / "frameport"
    monkeypatch.setenv("FRAMEPORT_CONFIG_DIR", str(tmp_path / "explicit"))
    assert config_dir() == tmp_path / "explicit"
    monkeypatch.setenv("FRAMEPORT_CONFIG_DIR", "here")
    with pytest.raises(ValueError, match="absolute"):
        config_dir()


def test_clients_share_one_ssl_context_per_certificate_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    default = _ssl_context("https://cloud.example/v1")
    assert _ssl_context("HTTPS://other.example/v1") is default
    assert default.cert_store_stats()["x509_ca"] > 0
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    assert _ssl_context("https://cloud.example/v1") is not default


def test_a_plain_http_client_loads_no_certificates_and_trusts_none() -> None:
    """Its requests never open TLS; were one opened, it would fail verification."""
    context = _ssl_context("http://127.0.0.1:8080/v1")
    assert context.cert_store_stats()["x509_ca"] == 0
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
