"""Functions: create one, deploy code to it, list and download its deployments.

A directory is packed into a ``.tar.gz`` (without ``.git``, ``__pycache__``, ``node_modules``
and virtual environments) in a temporary file and sent with the chunked uploader; an existing
``.tar.gz`` is sent as it is.

>>> etl = client.function("etl")                                           # doctest: +SKIP
>>> etl.deploy("./src", entrypoint="main.py", activate=True).status        # doctest: +SKIP
'waiting'
>>> etl.download_deployment(d.id, "etl-code.tar.gz")                       # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import os
import tarfile
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ._core._adaptive import AUTO, Auto
from ._core._ids import ID
from ._core._json import JsonObject
from ._core._polling import poll_until
from ._core._sync import SyncFacade, delegate, forward_property
from ._exceptions import DeploymentError
from ._records import DEPLOYMENT_SCHEMA, AsyncResource, list_frame, parse_time
from ._transfer._download import ResumableDownload
from ._transfer._progress import ProgressCallback
from ._transfer._upload import ChunkedUpload, UploadTarget

if TYPE_CHECKING:
    from ._core import Requester

#: Directories never packed into a deployment (besides any holding a ``pyvenv.cfg``).
SKIPPED_DIRECTORIES = frozenset({".git", "__pycache__", "node_modules", ".venv", "venv"})
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
#: The archive's file name in the upload form (the service requires a ``.gz`` name).
ARCHIVE_NAME = "code.tar.gz"


def _skipped(directory: Path) -> bool:
    return directory.name in SKIPPED_DIRECTORIES or (directory / "pyvenv.cfg").is_file()


def pack_directory(directory: Path, archive: Path) -> list[str]:
    """Write the contents of `directory` to the gzip'd tar `archive`, members named relative
    to `directory`, in sorted order; returns the member names.

    >>> pack_directory(Path("src"), Path("/tmp/code.tar.gz"))[:2]   # doctest: +SKIP
    ['main.py', 'requirements.txt']
    """
    members: list[str] = []
    with tarfile.open(archive, "w:gz") as tar:
        for root, directories, files in os.walk(directory):
            here = Path(root)
            directories[:] = sorted(d for d in directories if not _skipped(here / d))
            for name in [*directories, *sorted(files)]:
                path = here / name
                member = path.relative_to(directory).as_posix()
                tar.add(path, arcname=member, recursive=False)
                members.append(member)
    return members


def _check_entrypoint(entrypoint: str | None, members: list[str], directory: Path) -> None:
    """ValueError when `entrypoint` names no file packed from `directory` (before uploading)."""
    if entrypoint is None:
        return
    files = [member for member in members if not (directory / member).is_dir()]
    if entrypoint in files:
        return
    raise ValueError(
        f"entrypoint {entrypoint!r} is not a file in {str(directory)!r}; give its path "
        f"relative to that directory (files: {', '.join(files[:5]) or 'none'}"
        f"{', ...' if len(files) > 5 else ''})."
    )


@dataclass(frozen=True)
class Deployment:
    """A deployment of a function, as the service describes it; `record` is the whole record.

    >>> Deployment.from_record({"$id": "d1", "status": "waiting"}).status
    'waiting'
    """

    id: str
    function_id: str
    status: str
    entrypoint: str
    activate: bool
    source_size: int
    created_at: datetime | None
    updated_at: datetime | None
    record: JsonObject = field(repr=False, compare=False, hash=False)

    @classmethod
    def from_record(cls, record: JsonObject) -> Deployment:
        """A Deployment from the service's deployment record (as JSON)."""
        return cls(
            id=str(record["$id"]),
            function_id=str(record.get("resourceId") or ""),
            status=str(record.get("status") or ""),
            entrypoint=str(record.get("entrypoint") or ""),
            activate=bool(record.get("activate")),
            source_size=int(record.get("sourceSize") or 0),
            created_at=parse_time(record.get("$createdAt")),
            updated_at=parse_time(record.get("$updatedAt")),
            record=dict(record),
        )


class AsyncFunction(AsyncResource):
    """One function of the project; every I/O method is a coroutine. Get it with
    ``client.function(function_id)`` or ``await client.create_function(...)``."""

    _collection = "/functions"
    _items = "deployments"
    _exists_error = "function_already_exists"

    async def deploy(
        self,
        source: str | os.PathLike[str],
        entrypoint: str | None = None,
        commands: str | None = None,
        activate: bool = True,
        *,
        progress: bool | None = None,
        on_progress: ProgressCallback | None = None,
        concurrency: int | Auto = AUTO,
    ) -> Deployment:
        """Deploy the code in `source`: a directory (packed into a .tar.gz) or a .tar.gz file.

        `entrypoint` and `commands` default to the function's own; `activate` makes the
        deployment the active one once built; `concurrency`: parts uploaded at once,
        ``"auto"`` (adaptive, as every write) or a number. Returns the new deployment
        (status ``waiting``).
        """
        fields = {"activate": "true" if activate else "false"}
        if entrypoint is not None:
            fields["entrypoint"] = entrypoint
        if commands is not None:
            fields["commands"] = commands
        target = UploadTarget(
            path=self._items_path,
            part_field="code",
            part_name=ARCHIVE_NAME,
            fields=fields,
            id_field=None,
            verified=False,
        )
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(
                f"deploy() found no directory or .tar.gz archive at {str(path)!r}; "
                "check the path (a relative one starts at the working directory)."
            )
        with tempfile.TemporaryDirectory(prefix="frameport-") as directory:
            if path.is_dir():
                archive = Path(directory) / ARCHIVE_NAME
                members = await asyncio.to_thread(pack_directory, path, archive)
                _check_entrypoint(entrypoint, members, path)
            elif path.name.endswith(ARCHIVE_SUFFIXES):
                archive = path
            else:
                raise ValueError(
                    f"deploy() takes a directory or a .tar.gz archive; {str(path)!r} is neither."
                )
            with archive.open("rb") as stream:
                upload = ChunkedUpload(
                    self._requester,
                    target,
                    stream,
                    os.fstat(stream.fileno()).st_size,
                    ID.unique(),
                    label=f"deploy {self._id}",
                    progress=progress,
                    on_progress=on_progress,
                    concurrency=concurrency,
                )
                return Deployment.from_record(await upload.run())

    async def deployments(self) -> pd.DataFrame:
        """Every deployment of the function, one row each, oldest first (columns named as the
        service names them: ``$id``, ``status``, ``sourceSize``, ``$createdAt``, ...)."""
        return await list_frame(self._requester, self._items_path, "deployments", DEPLOYMENT_SCHEMA)

    async def deployment(self, deployment_id: str) -> Deployment:
        """The service's record of one deployment."""
        record = await self._requester.request_json("GET", self._item_path(deployment_id))
        return Deployment.from_record(record)

    async def wait(
        self, deployment_id: str, *, timeout: float = 300.0, interval: float = 0.5
    ) -> Deployment:
        """The deployment once the service has built it (status ``ready``), asking every
        `interval` seconds. Raises `DeploymentError` (with the build log) when it ends
        ``failed`` or ``canceled``, and `TimeoutError` after `timeout` seconds.

        >>> etl.wait(etl.deploy("./src").id).status
        'ready'
        """
        if timeout < 0 or interval <= 0:
            raise ValueError("wait() takes timeout >= 0 and interval > 0 (seconds).")

        async def built() -> Deployment | None:
            deployment = await self.deployment(deployment_id)
            if deployment.status in ("failed", "canceled"):
                logs = str(deployment.record.get("buildLogs") or "")
                raise DeploymentError(
                    f"Deployment {deployment.id!r} of function {self._id!r} is "
                    f"{deployment.status}: {_last_lines(logs) or 'the service gave no build log'}"
                    ". Fix the source (see build_logs) and deploy again.",
                    deployment_id=deployment.id,
                    status=deployment.status,
                    build_logs=logs,
                )
            return deployment if deployment.status == "ready" else None

        def timed_out() -> TimeoutError:
            return TimeoutError(
                f"Deployment {deployment_id!r} of function {self._id!r} was not built after "
                f"{timeout:g} s; wait longer (timeout=) or check it later with deployment()."
            )

        return await poll_until(built, timeout=timeout, delay=interval, timed_out=timed_out)

    async def download_deployment(
        self,
        deployment_id: str,
        path: str | os.PathLike[str],
        *,
        progress: bool | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Path:
        """Write the deployment's code archive (.tar.gz) to `path`; returns the Path.

        Like `Bucket.download`: through ``<path>.part``, continued if interrupted.
        """
        deployment = await self.deployment(deployment_id)
        download = ResumableDownload(
            self._requester,
            self._item_path(deployment_id, "download"),
            Path(path),
            size=deployment.source_size,
            md5=None,
            label=f"deployment {deployment_id}",
            progress=progress,
            on_progress=on_progress,
        )
        return await download.run()


async def create_function(
    requester: Requester,
    function_id: str,
    name: str,
    runtime: str,
    *,
    entrypoint: str | None = None,
    commands: str | None = None,
    exist_ok: bool = False,
) -> AsyncFunction:
    """Create a function (`function_id` may be ``"unique()"``) and return it. With
    `exist_ok`, a function that already exists is returned as it is (its settings unchanged)
    instead of raising `ConflictError`."""
    body: JsonObject = {"functionId": function_id, "name": name, "runtime": runtime}
    if entrypoint is not None:
        body["entrypoint"] = entrypoint
    if commands is not None:
        body["commands"] = commands
    return await AsyncFunction._create(requester, function_id, body, exist_ok=exist_ok)


class Function(SyncFacade[AsyncFunction], wraps=AsyncFunction):
    """One function of the project, for scripts and notebooks: the methods of
    `AsyncFunction`, each run to completion. Get it with ``client.function(function_id)``."""

    id = forward_property("id")
    info = delegate(AsyncFunction.info)
    deploy = delegate(AsyncFunction.deploy)
    deployments = delegate(AsyncFunction.deployments)
    deployment = delegate(AsyncFunction.deployment)
    wait = delegate(AsyncFunction.wait)
    download_deployment = delegate(AsyncFunction.download_deployment)


def _last_lines(text: str, count: int = 3) -> str:
    """The last `count` non-empty lines of a build log, joined on one line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " / ".join(lines[-count:])
