"""The sources a project is put into a destination from: an archive's snapshot (restore) and
a live project (copy: each table read up to the ``$sequence`` bound fixed when it starts)."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractContextManager, aclosing, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .._core._together import together
from .._functions import AsyncFunction
from .._storage import AsyncBucket
from .._tables import TableLocation
from .._tables._system import ALL_SYSTEM
from .._tables.read import QuerySpec, SequenceRange, TableRead, table_last_sequence
from ._archive import Archive
from ._entries import ProjectRecords
from ._manifest import table_batches, table_ids
from ._project import Selection, describe_project
from ._verify import CheckedSnapshot

if TYPE_CHECKING:
    from .._core import Requester


class ArchiveSource:
    """A snapshot of an archive, checked: its manifest's records (the `selection` of them),
    its tables' layers and its files."""

    def __init__(self, archive: Archive, checked: CheckedSnapshot, selection: Selection) -> None:
        manifest = checked.manifest
        self.archive = archive
        self.manifest = manifest
        self.label = archive.label
        self.action = "restore"
        self.snapshot: str | None = checked.snapshot
        self._as_written_before = checked.as_written_before
        self.project = selection.pick(manifest.project(), "the snapshot")
        self._layers = {
            (database["$id"], table.record["$id"]): table.layers
            for database, table in manifest.tables()
        }
        self._files = {
            (bucket.record["$id"], file.record["$id"]): file.path
            for bucket in manifest.buckets
            for file in bucket.files
        }
        self._code = {f.record["$id"]: f.path for f in manifest.functions if f.path is not None}

    async def check(self) -> None:
        """Read every table's IDs: a layer that is not Parquet of rows is an `ArchiveError`
        before anything is written."""
        for layers in self._layers.values():
            await table_ids(self.archive, layers)

    async def rows(self, database_id: str, table_id: str) -> AsyncGenerator[pa.RecordBatch]:
        batches = table_batches(self.archive, self._layers[(database_id, table_id)])
        async with aclosing(batches):
            async for batch in batches:
                yield batch

    async def row_ids(self, database_id: str, table_id: str) -> pa.Array[Any]:
        ids = await table_ids(self.archive, self._layers[(database_id, table_id)])
        return ids.column("$id").combine_chunks()

    def _fetched(self, name: str) -> AbstractContextManager[Path]:
        return self.archive.fetched(name, as_written_before=name in self._as_written_before)

    @asynccontextmanager
    async def content(self, bucket_id: str, file_id: str) -> AsyncIterator[Path]:
        with self._fetched(self._files[(bucket_id, file_id)]) as path:
            yield path

    @asynccontextmanager
    async def code(self, function_id: str) -> AsyncIterator[Path]:
        with self._fetched(self._code[function_id]) as path:
            yield path


class ServiceSource:
    """A live project, read as a backup reads it (`make` fixes the bounds)."""

    def __init__(
        self,
        requester: Requester,
        project: ProjectRecords,
        bounds: dict[tuple[str, str], int | None],
    ) -> None:
        self.requester = requester
        self.project = project
        self.label = f"{requester.endpoint} (project {requester.project})"
        self.action = "copy"
        self.snapshot: str | None = None
        self._bounds = bounds
        self._code = {
            f.record["$id"]: f.deployment["$id"]
            for f in project.functions
            if f.deployment is not None
        }

    @classmethod
    async def make(cls, requester: Requester, selection: Selection) -> ServiceSource:
        project = await describe_project(requester, selection)
        tables = [(d.record["$id"], t["$id"]) for d in project.databases for t in d.tables]
        lasts = await together(table_last_sequence(requester, TableLocation(*t)) for t in tables)
        return cls(requester, project, dict(zip(tables, lasts, strict=True)))

    async def _read(self, database_id: str, table_id: str) -> TableRead:
        read = await TableRead.make(
            self.requester, TableLocation(database_id, table_id), QuerySpec(system=ALL_SYSTEM)
        )
        bound = self._bounds[(database_id, table_id)] or 0
        return read.narrowed(*SequenceRange(0, bound).queries(read.plan.member))

    async def check(self) -> None:
        """Nothing to check: the service's rows are read as they are written."""

    async def rows(self, database_id: str, table_id: str) -> AsyncGenerator[pa.RecordBatch]:
        read = await self._read(database_id, table_id)
        async with aclosing(read.pages(collect=False)) as pages:
            async for batch in pages:
                if batch.num_rows:
                    yield batch

    async def row_ids(self, database_id: str, table_id: str) -> pa.Array[Any]:
        read = (await self._read(database_id, table_id)).ids_only()
        async with aclosing(read.pages(collect=True)) as pages:
            parts = [batch.column("$id") async for batch in pages]
        return pa.concat_arrays(parts) if parts else pa.array([], pa.string())

    @asynccontextmanager
    async def content(self, bucket_id: str, file_id: str) -> AsyncIterator[Path]:
        with tempfile.TemporaryDirectory(prefix="frameport-copy-") as folder:
            path = Path(folder) / "content"
            await AsyncBucket(self.requester, bucket_id).download(file_id, path, progress=False)
            yield path

    @asynccontextmanager
    async def code(self, function_id: str) -> AsyncIterator[Path]:
        with tempfile.TemporaryDirectory(prefix="frameport-copy-") as folder:
            path = Path(folder) / "code.tar.gz"
            source = AsyncFunction(self.requester, function_id)
            await source.download_deployment(self._code[function_id], path, progress=False)
            yield path
