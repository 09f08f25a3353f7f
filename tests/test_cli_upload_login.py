"""`frameport upload`, `frameport login` and `frameport logout`: files to a bucket with a
key or with the session `login` saved; the password read without an option and never saved."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import UserLogin
from frameport import ID, Client, Permission, Role
from frameport.cli import main
from frameport.local import LocalService


@pytest.fixture
def place(service: LocalService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The endpoint and project in the environment, no credential, an empty config dir."""
    monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
    monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
    monkeypatch.setenv("FRAMEPORT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("FRAMEPORT_PROGRESS", "0")
    for name in ("FRAMEPORT_KEY", "FRAMEPORT_JWT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def bucket_id(service: LocalService) -> str:
    """A bucket every signed-in user may create files in and read."""
    bucket = f"cli-{ID.unique()}"
    with service.client() as client:
        client.create_bucket(
            bucket,
            "cli uploads",
            permissions=[
                Permission.create(Role.users()),
                Permission.read(Role.users()),
            ],
        )
    return bucket


def uploaded_ids(output: str) -> list[str]:
    return [line.split(", file ")[1].split()[0] for line in output.splitlines()]


def test_upload_with_a_key_sends_every_byte(
    service: LocalService,
    place: None,
    bucket_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FRAMEPORT_KEY", service.key)
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(range(256)) * (12 * 4096 + 7))  # over two 5 MiB parts
    small = tmp_path / "small.csv"
    small.write_bytes(b"a,b\n1,2\n")
    assert main(["upload", bucket_id, str(big), str(small), "--concurrency", "2"]) == 0
    output = capsys.readouterr()
    assert service.key not in output.out + output.err
    ids = uploaded_ids(output.out)
    with service.client() as client:
        bucket = client.bucket(bucket_id)
        for file_id, source in zip(ids, (big, small), strict=True):
            data = bucket.read_range(file_id, 0, source.stat().st_size + 1)
            assert hashlib.md5(data).digest() == hashlib.md5(source.read_bytes()).digest()
            assert bucket.get(file_id).name == source.name


def test_upload_names_the_file_and_sets_permissions(
    service: LocalService,
    place: None,
    bucket_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FRAMEPORT_KEY", service.key)
    source = tmp_path / "x.txt"
    source.write_text("hello")
    file_id = ID.unique()
    options = ["--name", "greeting.txt", "--file-id", file_id, "--permission", 'read("any")']
    assert main(["upload", bucket_id, str(source), *options]) == 0
    said = capsys.readouterr().out
    assert uploaded_ids(said) == [file_id]
    assert f"uploaded {source} to bucket {bucket_id} as 'greeting.txt', file {file_id}" in said
    with service.client() as client:
        stored = client.bucket(bucket_id).get(file_id)
    assert (stored.name, stored.size, stored.permissions) == ("greeting.txt", 5, ('read("any")',))


def test_login_saves_a_session_that_upload_and_export_use(
    service: LocalService,
    place: None,
    bucket_id: str,
    make_user: Callable[..., UserLogin],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    login = make_user(name="Ada")
    monkeypatch.setattr("sys.stdin", io.StringIO(login.password + "\n"))
    assert main(["login", "--email", login.email, "--password-stdin"]) == 0
    assert "signed in as Ada" in capsys.readouterr().out
    saved = "".join(path.read_text() for path in (tmp_path / "config").rglob("*") if path.is_file())
    assert login.password not in saved

    source = tmp_path / "mine.txt"
    source.write_text("from a signed-in user")
    assert main(["upload", bucket_id, str(source)]) == 0
    (file_id,) = uploaded_ids(capsys.readouterr().out)
    with Client.from_saved(service.endpoint, service.project) as client:
        assert client.bucket(bucket_id).get(file_id).size == source.stat().st_size

    assert main(["logout"]) == 0
    capsys.readouterr()
    assert main(["upload", bucket_id, str(source)]) == 1
    error = capsys.readouterr().err
    assert "frameport login" in error and "Traceback" not in error


def test_login_with_a_wrong_password_saves_nothing(
    service: LocalService,
    place: None,
    make_user: Callable[..., UserLogin],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    login = make_user()
    monkeypatch.setattr("sys.stdin", io.StringIO("not-the-password\n"))
    assert main(["login", "--email", login.email, "--password-stdin"]) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("frameport login:") and "check the e-mail and password" in error
    assert "not-the-password" not in error
    config = tmp_path / "config"
    assert not config.exists() or not any(path.is_file() for path in config.rglob("*"))


def test_login_without_a_terminal_asks_for_password_stdin(
    place: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["login", "--email", "a@example.org"]) == 2
    assert "--password-stdin" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["missing.bin"], "is not a file"),
        (["a.txt", "b.txt", "--name", "x"], "give one path"),
    ],
)
def test_upload_refuses_bad_paths_before_sending(
    service: LocalService,
    place: None,
    bucket_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    said: str,
) -> None:
    monkeypatch.setenv("FRAMEPORT_KEY", service.key)
    monkeypatch.chdir(tmp_path)
    for name in ("a.txt", "b.txt"):
        Path(name).write_text(name)
    assert main(["upload", bucket_id, *arguments]) == 2
    assert said in capsys.readouterr().err
    with service.client() as client:
        assert len(client.bucket(bucket_id).list_files()) == 0
