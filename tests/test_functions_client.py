"""Function deployments over HTTP: a directory is packed (without .git, caches, virtual
environments, node_modules), sent with the chunked uploader, and downloads identical."""

from __future__ import annotations

import io
import pickle
import random
import tarfile
from pathlib import Path

import pytest

from frameport import ID, Client, Deployment, DeploymentError, Function, NotFoundError
from storage_support import MIB

pytest_plugins = ["storage_fixtures"]
pytestmark = pytest.mark.usefixtures("checkpoint_dir")


@pytest.fixture
def function(storage_client: Client) -> Function:
    return storage_client.create_function(ID.unique(), "etl", "python-3.12", entrypoint="main.py")


def write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A code directory with files to deploy and directories that must be left out."""
    root = tmp_path / "project"
    write(root / "main.py", "print('hello')\n")
    write(root / "requirements.txt", "pandas\n")
    write(root / "pkg" / "__init__.py", "")
    write(root / "pkg" / "data.bin", random.Random(1).randbytes(70_000))
    write(root / "pkg" / "__pycache__" / "data.cpython-311.pyc", b"\0")
    write(root / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(root / ".venv" / "pyvenv.cfg", "home = /usr\n")
    write(root / "env" / "pyvenv.cfg", "home = /usr\n")  # a virtual environment by content
    write(root / "env" / "lib" / "site.py", "")
    write(root / "venv" / "bin" / "python", "")
    write(root / "web" / "node_modules" / "left-pad" / "index.js", "")
    write(root / "web" / "app.js", "console.log(1)\n")
    (root / "empty").mkdir()
    return root


DEPLOYED = {
    "main.py",
    "requirements.txt",
    "pkg",
    "pkg/__init__.py",
    "pkg/data.bin",
    "web",
    "web/app.js",
    "empty",
}


def members(archive: bytes) -> dict[str, bytes | None]:
    """Member name → content (None for directories)."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return {
            member.name: (tar.extractfile(member).read() if member.isfile() else None)  # type: ignore[union-attr]
            for member in tar.getmembers()
        }


def test_a_deployed_directory_downloads_identical(
    function: Function, project: Path, tmp_path: Path
):
    deployment = function.deploy(project, entrypoint="main.py")

    assert isinstance(deployment, Deployment)
    assert deployment.function_id == function.id
    assert deployment.entrypoint == "main.py" and deployment.activate
    saved = function.download_deployment(deployment.id, tmp_path / "code.tar.gz")
    contents = members(saved.read_bytes())
    assert set(contents) == DEPLOYED
    for name in DEPLOYED:
        path = project / name
        assert contents[name] == (None if path.is_dir() else path.read_bytes())


def test_an_archive_is_sent_as_it_is_in_parts(function: Function, tmp_path: Path):
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        payload = random.Random(2).randbytes(12 * MIB)  # incompressible: 3 parts
        info = tarfile.TarInfo("main.py")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    sent: list[int] = []

    deployment = function.deploy(archive, on_progress=lambda done, total: sent.append(done))

    assert len(sent) == 3 and sent[-1] == archive.stat().st_size
    assert deployment.source_size == archive.stat().st_size
    copy = function.download_deployment(deployment.id, tmp_path / "copy.tar.gz")
    assert copy.read_bytes() == archive.read_bytes()


def test_deployments_are_listed_and_become_ready(function: Function, project: Path):
    first = function.deploy(project, activate=False)
    second = function.deploy(project, commands="pip install -r requirements.txt")

    listed = function.deployments()

    assert list(listed["$id"]) == [first.id, second.id]
    assert listed["sourceSize"].dtype == "Int64"
    assert listed["$createdAt"].dtype == "datetime64[ms, UTC]"
    assert list(listed["activate"]) == [False, True]
    assert function.wait(second.id, timeout=30).status == "ready"
    assert function.info()["deploymentId"] == second.id


def test_only_directories_and_tar_gz_archives_are_deployed(function: Function, tmp_path: Path):
    script = tmp_path / "main.py"
    script.write_text("print(1)\n")
    with pytest.raises(ValueError, match=r"\.tar\.gz"):
        function.deploy(script)


def test_an_unknown_function_is_not_found(storage_client: Client, project: Path):
    with pytest.raises(NotFoundError) as caught:
        storage_client.function("nobody").deploy(project)
    assert caught.value.type == "function_not_found"


def test_an_entrypoint_missing_from_the_directory_is_refused_before_uploading(
    function: Function, project: Path
):
    with pytest.raises(ValueError, match=r"'src/main\.py' is not a file in .*main\.py"):
        function.deploy(project, entrypoint="src/main.py")
    with pytest.raises(ValueError, match="is not a file"):
        function.deploy(project, entrypoint="pkg")  # a directory
    assert function.deployments().empty


def test_a_missing_source_is_file_not_found(function: Function, tmp_path: Path):
    for missing in (tmp_path / "nowhere", tmp_path / "code.tar.gz"):
        with pytest.raises(FileNotFoundError, match="check the path"):
            function.deploy(missing)


def test_wait_returns_the_built_deployment(function: Function, project: Path):
    deployment = function.wait(function.deploy(project).id, timeout=30)
    assert deployment.status == "ready"
    assert function.info()["deploymentId"] == deployment.id


def test_wait_raises_with_the_build_log_when_the_build_fails(function: Function, tmp_path: Path):
    archive = tmp_path / "broken.tar.gz"
    archive.write_bytes(b"this is not a gzip archive" * 10)
    deployment = function.deploy(archive)
    with pytest.raises(DeploymentError) as failed:
        function.wait(deployment.id, timeout=30)
    assert failed.value.status == "failed" and failed.value.deployment_id == deployment.id
    assert failed.value.build_logs and "deploy again" in str(failed.value)
    copy = pickle.loads(pickle.dumps(failed.value))  # e.g. raised in a dask worker
    assert (copy.deployment_id, copy.status, str(copy)) == (
        deployment.id,
        "failed",
        str(failed.value),
    )
    assert function.deployment(deployment.id).status == "failed"


def test_wait_refuses_a_negative_timeout_or_no_interval(function: Function, project: Path):
    deployment = function.deploy(project)
    with pytest.raises(ValueError, match="interval > 0"):
        function.wait(deployment.id, interval=0)
    with pytest.raises(ValueError, match="timeout >= 0"):
        function.wait(deployment.id, timeout=-1)
