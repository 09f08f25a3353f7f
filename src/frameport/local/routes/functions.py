"""/v1/functions: functions and their deployments (service interface, "Functions").
Functions are not run.

A deployment is a .tar.gz uploaded by the chunk rules of the files
(service interface, "Chunked uploads"), every chunk answered with 202 and the Deployment. Once the
last chunk is in, the answer is sent with status `waiting`, and then the archive is checked in place
of a build: a sound archive makes the deployment `ready` (and, with `activate`, the function's
active deployment), anything else `failed` with the reason in `buildLogs`. Clients poll `GET
.../deployments/{id}`.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.background import BackgroundTask
from starlette.datastructures import UploadFile
from starlette.responses import JSONResponse, Response

from ..service._state import ServiceState
from ..service.downloads._stored_bytes import stored_bytes_response
from ..service.uploads._archive import check_archive
from ..service.uploads._chunks import (
    ChunkPlan,
    FileTarget,
    JoinedSizeMismatch,
    UploadPaths,
    part_size,
    part_too_long,
    plan_chunk,
    ranged_chunk,
    require_same_size,
    require_whole_chunk,
    upload_id,
    upload_lock,
    uploaded_part,
)
from ..store._listing import MetadataList
from ..wire._errors import ServiceError
from ..wire._timefmt import now_text, stamps
from ._routing import Context, Reply, RouteSpec, route

#: The largest deployment archive, in bytes (`_APP_COMPUTE_SIZE_LIMIT`'s default).
DEPLOYMENT_SIZE_LIMIT = 30_000_000

FUNCTION_LIST = MetadataList(
    "functions",
    {"string": ("name", "runtime", "entrypoint"), "id": ("deploymentId",)},
    noun="Function",
)
DEPLOYMENT_LIST = MetadataList(
    "deployments",
    {
        "string": ("entrypoint", "status"),
        "boolean": ("activate",),
        "integer": ("sourceSize", "totalSize"),
    },
    noun="Deployment",
    search_column="entrypoint",
    columns={"totalSize": "source_size"},
)
_FUNCTION_COLUMNS = (
    "sequence, id, name, runtime, entrypoint, commands, deployment_id, created_at, updated_at"
)
_DEPLOYMENT_COLUMNS = (
    "sequence, function_id, id, entrypoint, commands, activate, status, build_logs, "
    "source_size, chunks_total, chunks_uploaded, created_at, updated_at"
)


@dataclass(frozen=True)
class StoredFunction:
    sequence: int
    id: str
    name: str
    runtime: str
    entrypoint: str
    commands: str
    deployment_id: str
    created_at: str
    updated_at: str

    def model(self, conn: sqlite3.Connection) -> dict[str, Any]:
        """The Function model: the active deployment and the latest one."""
        active = _find_deployment(conn, self.id, self.deployment_id)
        latest_row = conn.execute(
            f"SELECT {_DEPLOYMENT_COLUMNS} FROM deployments WHERE function_id = ? "
            "ORDER BY sequence DESC LIMIT 1",
            (self.id,),
        ).fetchone()
        latest = None if latest_row is None else StoredDeployment(*latest_row)
        return {
            **stamps(self.id, self.created_at, self.updated_at),
            "execute": [],
            "name": self.name,
            "enabled": True,
            "live": True,
            "logging": True,
            "runtime": self.runtime,
            "deploymentId": self.deployment_id,
            "deployment": self.deployment_id,
            "deploymentCreatedAt": active.created_at if active else "",
            "latestDeploymentId": latest.id if latest else "",
            "latestDeploymentCreatedAt": latest.created_at if latest else "",
            "latestDeploymentStatus": latest.status if latest else "",
            "scopes": [],
            "vars": [],
            "events": [],
            "schedule": "",
            "timeout": 15,
            "entrypoint": self.entrypoint,
            "commands": self.commands,
            "version": "v5",
        }


@dataclass(frozen=True)
class StoredDeployment:
    sequence: int
    function_id: str
    id: str
    entrypoint: str
    commands: str
    activate: int
    status: str
    build_logs: str
    source_size: int
    chunks_total: int
    chunks_uploaded: int
    created_at: str
    updated_at: str

    @property
    def complete(self) -> bool:
        return self.chunks_uploaded >= self.chunks_total

    def model(self) -> dict[str, Any]:
        """The Deployment model, without chunk counters (service interface, "Models")."""
        provider = (
            "providerRepositoryName",
            "providerRepositoryOwner",
            "providerRepositoryUrl",
            "providerCommitHash",
            "providerCommitAuthorUrl",
            "providerCommitAuthor",
            "providerCommitMessage",
            "providerCommitUrl",
            "providerBranch",
            "providerBranchUrl",
        )
        return {
            **stamps(self.id, self.created_at, self.updated_at),
            "type": "manual",
            "resourceId": self.function_id,
            "resourceType": "functions",
            "entrypoint": self.entrypoint,
            "sourceSize": self.source_size,
            "buildSize": 0,
            "totalSize": self.source_size,
            "buildId": "",
            "activate": bool(self.activate),
            "screenshotLight": "",
            "screenshotDark": "",
            "status": self.status,
            "buildLogs": self.build_logs,
            "buildDuration": 0,
            **dict.fromkeys(provider, ""),
        }


def _find_function(conn: sqlite3.Connection, function_id: str) -> StoredFunction | None:
    row = conn.execute(
        f"SELECT {_FUNCTION_COLUMNS} FROM functions WHERE id = ?", (function_id,)
    ).fetchone()
    return None if row is None else StoredFunction(*row)


def _find_deployment(
    conn: sqlite3.Connection, function_id: str, deployment_id: str
) -> StoredDeployment | None:
    row = conn.execute(
        f"SELECT {_DEPLOYMENT_COLUMNS} FROM deployments WHERE function_id = ? AND id = ?",
        (function_id, deployment_id),
    ).fetchone()
    return None if row is None else StoredDeployment(*row)


def _function(conn: sqlite3.Connection, function_id: str) -> StoredFunction:
    found = _find_function(conn, function_id)
    if found is None:
        raise ServiceError(
            "function_not_found", "Function with the requested ID could not be found."
        )
    return found


def _deployment(conn: sqlite3.Connection, function_id: str, deployment_id: str) -> StoredDeployment:
    found = _find_deployment(conn, function_id, deployment_id)
    if found is None:
        raise ServiceError(
            "deployment_not_found", "Deployment with the requested ID could not be found."
        )
    return found


def deployment_files(state: ServiceState, function_id: str) -> UploadPaths:
    """Where a function's deployment archives live on disk."""
    return UploadPaths(state.functions_dir / function_id)


# -- functions ------------------------------------------------------------------------------


def create_function(ctx: Context) -> Reply:
    function_id = ctx.params.uid("functionId")
    name = ctx.params.required_string("name", max_length=128)
    runtime = ctx.params.string("runtime", required=True, min_length=1, max_length=64) or ""
    entrypoint = ctx.params.string("entrypoint", default="", max_length=1028) or ""
    commands = ctx.params.string("commands", default="", max_length=8192) or ""
    now = now_text()
    with ctx.store.write() as conn:
        if _find_function(conn, function_id) is not None:
            raise ServiceError(
                "function_already_exists", "A function with the requested ID already exists."
            )
        conn.execute(
            "INSERT INTO functions (id, name, runtime, entrypoint, commands, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (function_id, name, runtime, entrypoint, commands, now, now),
        )
        return Reply(_function(conn, function_id).model(conn), 201)


def get_function(ctx: Context) -> Reply:
    with ctx.store.read() as conn:
        return Reply(_function(conn, ctx.path["functionId"]).model(conn))


def list_functions(ctx: Context) -> Reply:
    listed = FUNCTION_LIST.parse(ctx.params)
    with ctx.store.read() as conn:
        total, rows = FUNCTION_LIST.page(conn, listed, _FUNCTION_COLUMNS)
        functions = [StoredFunction(*row).model(conn) for row in rows]
    return Reply({"total": total, "functions": functions})


# -- deployments ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DeploymentChunk:
    """What one deployment request carries, checked in the service's order."""

    deployment_id: str
    entrypoint: str
    commands: str
    activate: bool
    plan: ChunkPlan
    code: UploadFile


def _read_chunk(ctx: Context, function: StoredFunction) -> DeploymentChunk:
    entrypoint = ctx.params.string("entrypoint", max_length=1028) or function.entrypoint
    if not entrypoint:
        raise ServiceError(
            "function_entrypoint_missing",
            "Entrypoint for your function is missing: send `entrypoint` or set it on the function.",
        )
    commands = ctx.params.string("commands", max_length=8192)
    activate = ctx.params.boolean("activate", required=True)
    code = uploaded_part(ctx.params, "code")
    if not (code.filename or "").lower().endswith(".gz"):
        raise ServiceError(
            "storage_file_type_unsupported", "The deployment archive must be a .tar.gz file."
        )
    _declared_chunk(ctx)
    plan = plan_chunk(ctx.header("Content-Range"), part_size(code))
    if plan.total_size > DEPLOYMENT_SIZE_LIMIT:
        raise _too_large()
    deployment_id = upload_id(ctx.header("X-Service-ID"))
    chosen_commands = function.commands if commands is None else commands
    return DeploymentChunk(deployment_id, entrypoint, chosen_commands, activate, plan, code)


def _too_large() -> ServiceError:
    return ServiceError(
        "deployment_invalid_file_size",
        f"The deployment archive is larger than {DEPLOYMENT_SIZE_LIMIT} bytes.",
    )


def _declared_chunk(ctx: Context) -> ChunkPlan | None:
    """The chunk the Content-Range declares (None without one): within the size limit and
    a whole chunk."""
    content_range = ctx.header("Content-Range")
    if not content_range:
        return None
    plan = ranged_chunk(content_range)
    if plan.total_size > DEPLOYMENT_SIZE_LIMIT:
        raise _too_large()
    require_whole_chunk(plan, content_range)
    return plan


def incoming_code(ctx: Context) -> FileTarget:
    """Before the body: the function exists, the declared chunk (`_declared_chunk`), and
    where the `code` part goes, at most the chunk's length or the size limit."""
    with ctx.store.read() as conn:
        function = _function(conn, ctx.path["functionId"])
    plan = _declared_chunk(ctx)
    incoming = deployment_files(ctx.state, function.id).incoming
    if plan is None:
        return FileTarget("code", DEPLOYMENT_SIZE_LIMIT, incoming, _too_large)
    content_range = ctx.header("Content-Range")
    return FileTarget("code", plan.length, incoming, lambda: part_too_long(content_range, plan))


def create_deployment(ctx: Context) -> Response | Reply:
    """One chunk of a deployment archive; 202 with the Deployment on every chunk."""
    with ctx.store.read() as conn:
        function = _function(conn, ctx.path["functionId"])
    chunk = _read_chunk(ctx, function)
    paths = deployment_files(ctx.state, function.id)
    staged = paths.stage(chunk.code)
    try:
        with upload_lock(ctx.state, f"deployment:{function.id}:{chunk.deployment_id}"):
            stored, completed_now = _store_chunk(ctx, function, chunk, paths, staged)
    finally:
        staged.unlink(missing_ok=True)
    if not completed_now:
        return Reply(stored.model(), 202)
    build = BackgroundTask(_check_deployment, ctx.state, function.id, stored.id)
    return JSONResponse(stored.model(), status_code=202, background=build)


def _store_chunk(
    ctx: Context,
    function: StoredFunction,
    chunk: DeploymentChunk,
    paths: UploadPaths,
    staged: Path,
) -> tuple[StoredDeployment, bool]:
    """Keep the chunk (under the upload's lock); True when it completed the archive."""
    with ctx.store.write() as conn:
        stored = _find_deployment(conn, function.id, chunk.deployment_id)
        if stored is None:
            now = now_text()
            conn.execute(
                "INSERT INTO deployments (function_id, id, entrypoint, commands, activate, "
                "status, build_logs, source_size, chunks_total, chunks_uploaded, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, 'waiting', '', ?, ?, 0, ?, ?)",
                (
                    function.id,
                    chunk.deployment_id,
                    chunk.entrypoint,
                    chunk.commands,
                    int(chunk.activate),
                    chunk.plan.total_size,
                    chunk.plan.total_chunks,
                    now,
                    now,
                ),
            )
            stored = _deployment(conn, function.id, chunk.deployment_id)
    if stored.complete:  # a chunk sent again: nothing new
        return stored, False
    require_same_size(stored.id, stored.source_size, chunk.plan)
    parts = paths.parts(stored.id)
    parts.commit(staged, chunk.plan.index)
    uploaded = parts.count()
    complete = uploaded >= stored.chunks_total
    size = stored.source_size
    if complete:
        try:
            size = parts.join(paths.joining(stored.id), stored.chunks_total, size).size
        except JoinedSizeMismatch:
            paths.remove(stored.id)
            with ctx.store.write() as conn:
                conn.execute("DELETE FROM deployments WHERE sequence = ?", (stored.sequence,))
            raise
    with ctx.store.write() as conn:
        conn.execute(
            "UPDATE deployments SET chunks_uploaded = MAX(chunks_uploaded, ?), source_size = ?, "
            "updated_at = ? WHERE sequence = ?",
            (uploaded, size, now_text(), stored.sequence),
        )
        updated = _deployment(conn, function.id, stored.id)
    if complete:
        paths.place(stored.id)
    return updated, complete


def _check_deployment(state: ServiceState, function_id: str, deployment_id: str) -> None:
    """The local service's build: check the archive, then mark the deployment and activate it."""
    with state.store.write() as conn:
        conn.execute(
            "UPDATE deployments SET status = 'processing', updated_at = ? "
            "WHERE function_id = ? AND id = ?",
            (now_text(), function_id, deployment_id),
        )
        stored = _deployment(conn, function_id, deployment_id)
    path = deployment_files(state, function_id).final(deployment_id)
    verdict = check_archive(path, stored.entrypoint)
    now = now_text()
    with state.store.write() as conn:
        conn.execute(
            "UPDATE deployments SET status = ?, build_logs = ?, updated_at = ? WHERE sequence = ?",
            ("ready" if verdict.ok else "failed", verdict.log, now, stored.sequence),
        )
        if verdict.ok and stored.activate:
            conn.execute(
                "UPDATE functions SET deployment_id = ?, updated_at = ? WHERE id = ?",
                (deployment_id, now, function_id),
            )


def get_deployment(ctx: Context) -> Reply:
    with ctx.store.read() as conn:
        function = _function(conn, ctx.path["functionId"])
        return Reply(_deployment(conn, function.id, ctx.path["deploymentId"]).model())


def list_deployments(ctx: Context) -> Reply:
    listed = DEPLOYMENT_LIST.parse(ctx.params)
    with ctx.store.read() as conn:
        function = _function(conn, ctx.path["functionId"])
        scope = ("function_id = ?", [function.id])
        total, rows = DEPLOYMENT_LIST.page(conn, listed, _DEPLOYMENT_COLUMNS, scope=scope)
    return Reply({"total": total, "deployments": [StoredDeployment(*r).model() for r in rows]})


def download_deployment(ctx: Context) -> Response:
    """The deployment's archive as uploaded (Range requests work as for files)."""
    with ctx.store.read() as conn:
        function = _function(conn, ctx.path["functionId"])
        stored = _deployment(conn, function.id, ctx.path["deploymentId"])
    if not stored.complete:
        raise ServiceError(
            "deployment_not_found", "The deployment's archive has not been uploaded completely."
        )
    headers = {"Content-Disposition": f'attachment; filename="{stored.id}.tar.gz"'}
    path = deployment_files(ctx.state, function.id).final(stored.id)
    return stored_bytes_response(path, ctx.header("Range"), "application/gzip", headers)


ROUTES: list[RouteSpec] = [
    *route(create_function, "POST", "/v1/functions", scopes=("functions.write",)),
    *route(get_function, "GET", "/v1/functions/{functionId}", scopes=("functions.read",)),
    *route(list_functions, "GET", "/v1/functions", scopes=("functions.read",)),
    *route(
        create_deployment,
        "POST",
        "/v1/functions/{functionId}/deployments",
        scopes=("functions.write",),
        file_target=incoming_code,
    ),
    *route(
        get_deployment,
        "GET",
        "/v1/functions/{functionId}/deployments/{deploymentId}",
        scopes=("functions.read",),
    ),
    *route(
        list_deployments,
        "GET",
        "/v1/functions/{functionId}/deployments",
        scopes=("functions.read",),
    ),
    *route(
        download_deployment,
        "GET",
        "/v1/functions/{functionId}/deployments/{deploymentId}/download",
        scopes=("functions.read",),
    ),
]
