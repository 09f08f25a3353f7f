"""Managing databases, tables and columns: create (or find) them, drop them, list a table's
columns, add a column.

`create_table` makes the database (when missing), the table and its columns in one request,
then waits until every column is ``available``; with ``exist_ok`` an existing table is kept
when it already has the columns asked for. `add_column` creates one column of any of the
service's types and waits for it the same way. The wait shows a progress bar of the columns
that are ready once it takes longer than a moment.

>>> await create_table(requester, TableLocation("crm", "people"), {"age": "integer"})
... # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from .._core._ids import ID
from .._core._polling import poll_until
from .._core._progress import progress_bar
from .._exceptions import AuthenticationError, ConflictError, FrameportError
from .._schema import (
    TIMESTAMP,
    NewColumn,
    SchemaProposal,
    arrow_schema,
    column_definitions,
    column_type_name,
    parse_column_type,
    propose_frame,
    to_pandas,
)
from ._location import TableLocation
from .read import column_models

if TYPE_CHECKING:
    from .._core import Requester

log = logging.getLogger(__name__)

COLUMN_WAIT_SECONDS = 120.0
"""How long `create_table` and `add_column` wait for their columns to become available."""

DATABASES_PATH = "/tablesdb"

_ALREADY_EXISTS = frozenset({"table_already_exists", "collection_already_exists"})

_COLUMN_FIELDS: list[tuple[str, pa.DataType]] = [
    ("key", pa.string()),
    ("type", pa.string()),
    ("array", pa.bool_()),
    ("required", pa.bool_()),
    ("size", pa.int64()),
    ("elements", pa.list_(pa.string())),
    ("status", pa.string()),
    ("error", pa.string()),
    ("dtype", pa.string()),
    ("$createdAt", TIMESTAMP),
    ("$updatedAt", TIMESTAMP),
]
COLUMN_SCHEMA = pa.schema(_COLUMN_FIELDS)
"""The columns of `Table.columns`: ``type`` is the create-endpoint name (``email``,
``float``...), ``dtype`` the pandas dtype the column reads as."""
COLUMN_SUMMARY = ("key", "type", "dtype", "required", "array", "size")
"""The columns `Table.columns` keeps without ``details=True``."""


# ---------------------------------------------------------------------------------------------
# Databases


async def create_database(
    requester: Requester, database_id: str, name: str | None = None, *, exist_ok: bool = False
) -> dict[str, Any]:
    """Create the database `database_id` (named `name`, default its ID) and return its
    record; with `exist_ok`, a database that already exists is returned as it is instead of
    raising `ConflictError`."""
    path = f"{DATABASES_PATH}/{ID.custom(database_id)}"
    body = {"databaseId": database_id, "name": name or database_id}
    try:
        record: dict[str, Any] = await requester.request_json(
            "POST", DATABASES_PATH, json=body, idempotent=True, read_back=path
        )
    except ConflictError as exc:
        if not (exist_ok and exc.type == "database_already_exists"):
            raise
        record = await requester.request_json("GET", path)
    return record


async def drop_database(requester: Requester, database_id: str) -> None:
    """Delete the database `database_id` with every table in it and their rows."""
    await requester.request("DELETE", f"{DATABASES_PATH}/{ID.custom(database_id)}")


# ---------------------------------------------------------------------------------------------
# Tables


async def create_table(
    requester: Requester,
    location: TableLocation,
    schema: pd.DataFrame | Mapping[str, str],
    *,
    name: str | None = None,
    permissions: Sequence[str] | None = None,
    row_security: bool = False,
    exist_ok: bool = False,
    wait: float = COLUMN_WAIT_SECONDS,
    progress: bool | None = None,
) -> None:
    """Create the table at `location` with the columns `schema` describes (what a
    DataFrame's values call for, logged at INFO; a `SchemaProposal`; or
    ``{column: type name}``), creating its database first when it is missing, and return once
    every column is available.

    The service's own fields (``$id``, ``$permissions`` ...) are not created; a name that
    cannot be a column key (another ``$`` name, a space...) raises ValueError before any
    request. Raises `ConflictError` when the table already exists, unless `exist_ok` is set
    and the table has every column of `schema`: then it is kept as it is.
    """
    checked = _checked_schema(schema)
    if isinstance(checked, pd.DataFrame):
        checked = propose_frame(checked)
        log.info("%s: the columns of the frame's values\n%s", location, checked.lines())
    definitions = column_definitions(checked)
    keys = [str(definition["key"]) for definition in definitions]
    await create_database(requester, location.database_id, exist_ok=True)
    body = {
        location.id_param: location.table_id,
        "name": name or location.table_id,
        "permissions": list(permissions or []),
        location.security_param: row_security,
        location.columns_key: definitions,
    }
    try:
        await requester.request(
            "POST", location.container_path, json=body, idempotent=True, read_back=location.path
        )
    except ConflictError as exc:
        if exc.type not in _ALREADY_EXISTS:
            raise
        if not exist_ok:
            exc.hint = (
                f"The table {location} exists: pass exist_ok=True to keep it (its columns must "
                "include the schema's), or drop it first with table.drop()."
            )
            raise
        await _check_existing_columns(requester, location, keys, exc)
    await wait_for_columns(requester, location, keys, timeout=wait, progress=progress)


async def _check_existing_columns(
    requester: Requester, location: TableLocation, keys: Sequence[str], conflict: ConflictError
) -> None:
    """Raise `conflict` with advice when the existing table lacks some of the columns `keys`."""
    models = await column_models(requester, location) or []
    missing = sorted(set(keys) - {str(model["key"]) for model in models})
    if missing:
        conflict.hint = (
            f"The table {location} exists without the column(s) {missing}: add them with "
            "table.add_column(key, type), or drop the table with table.drop() first."
        )
        raise conflict


def _checked_schema(
    schema: pd.DataFrame | Mapping[str, str],
) -> pd.DataFrame | SchemaProposal | dict[str, str]:
    if isinstance(schema, pd.DataFrame | SchemaProposal):
        return schema
    if isinstance(schema, Mapping):
        return {str(key): kind for key, kind in schema.items()}
    raise TypeError(
        "schema is a DataFrame (columns from its values), a proposal of fp.infer_schema or a "
        "{column: type} mapping, "
        f"not {type(schema).__name__}"
    )


async def drop_table(requester: Requester, location: TableLocation) -> None:
    """Delete the table at `location` with its rows."""
    await requester.request("DELETE", location.path)


# ---------------------------------------------------------------------------------------------
# Columns


async def column_frame(
    requester: Requester, location: TableLocation, *, details: bool = False
) -> pd.DataFrame:
    """The table's columns, one row each (see `COLUMN_SCHEMA`; `COLUMN_SUMMARY` only,
    without `details`), in the table's order."""
    models = await column_models(requester, location)
    if models is None:
        raise AuthenticationError(
            "this client may not read the table's columns (an API key with tables.read can)",
            status=401,
            type="general_unauthorized_scope",
            method="GET",
            url=location.path,
        )
    dtypes = to_pandas(arrow_schema(models).empty_table()).dtypes
    rows = [
        {
            **{name: model.get(name) for name in COLUMN_SCHEMA.names},
            "type": column_type_name(model),
            "array": bool(model.get("array")),
            "dtype": str(dtypes[model["key"]]) if model["key"] in dtypes else None,
            "$createdAt": pd.Timestamp(model["$createdAt"]) if model.get("$createdAt") else None,
            "$updatedAt": pd.Timestamp(model["$updatedAt"]) if model.get("$updatedAt") else None,
        }
        for model in models
    ]
    described = pa.Table.from_pylist(rows, schema=COLUMN_SCHEMA)
    return to_pandas(described if details else described.select(list(COLUMN_SUMMARY)))


def column_of_type(key: str, type: str, *, elements: Sequence[str] | None = None) -> NewColumn:
    """The column `key` of the service type `type` (``"integer"``, ``"string(1000)"``,
    ``"email[]"``, ``"enum"`` with `elements` ...)."""
    if type.strip().removesuffix("[]") == "enum":
        if not elements:
            raise ValueError(f"column {key!r}: an enum column needs its elements=[...]")
        return NewColumn(key, "enum", array=type.strip().endswith("[]"), elements=tuple(elements))
    if elements is not None:
        raise ValueError(f"column {key!r}: elements= is for enum columns only (got {type!r})")
    return parse_column_type(key, type)


async def add_column(
    requester: Requester,
    location: TableLocation,
    column: NewColumn,
    *,
    required: bool = False,
    default: object = None,
    minimum: float | None = None,
    maximum: float | None = None,
    wait: float = COLUMN_WAIT_SECONDS,
    progress: bool | None = None,
) -> None:
    """Create `column` in the table at `location` and return once it is available."""
    body = {key: value for key, value in column.definition().items() if key != "type"}
    body["required"] = required
    for name, value in (("default", default), ("min", minimum), ("max", maximum)):
        if value is not None:
            body[name] = value
    path = f"{location.path}/{location.columns_key}/{column.type}"
    await requester.request("POST", path, json=body)
    await wait_for_columns(requester, location, [column.key], timeout=wait, progress=progress)


async def wait_for_columns(
    requester: Requester,
    location: TableLocation,
    keys: Iterable[str],
    *,
    timeout: float,
    progress: bool | None = None,
) -> None:
    """Poll the table until the columns `keys` are ``available``; raise `FrameportError` when
    one failed, or when `timeout` seconds pass. The bar counts the columns that are ready."""
    waiting = set(keys)
    bar = progress_bar(
        total=len(waiting), unit="columns", desc=f"columns of {location}", enabled=progress
    )

    async def all_available() -> bool | None:
        table = await requester.request_json("GET", location.path)
        status = {str(c["key"]): c for c in table.get(location.columns_key, [])}
        for key in sorted(waiting):
            column = status.get(key, {})
            if column.get("status") in ("failed", "stuck"):
                raise FrameportError(
                    f"column {key!r} of {location} could not be created: "
                    f"{column.get('status')} ({column.get('error') or 'no detail'})"
                )
            if column.get("status") == "available":
                waiting.discard(key)
                bar.update(1)
        return True if not waiting else None

    def timed_out() -> FrameportError:
        return FrameportError(
            f"columns {sorted(waiting)} of {location} were not available after {timeout:g} s"
        )

    with bar:
        await poll_until(
            all_available, timeout=timeout, delay=0.02, max_delay=1.0, timed_out=timed_out
        )
