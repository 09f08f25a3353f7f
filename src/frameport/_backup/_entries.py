"""The records of an archive, each read from its JSON and written back as the same JSON: a
snapshot's `Plan` (with the `ProjectRecords` it fixed), its `Manifest` (databases with their
`TableEntry`s and their `Layer`s of `FilePart`s, buckets with their files, functions with
their code) and its `Hashes`. The service's own records (a database, table, bucket, file,
function or deployment) are kept as it sent them (`Record`).

Reading one checks it first: each entry a restore or `verify` uses is there and of its kind,
each ID one the service takes. What is not raises `Misshapen` naming its place:

>>> Manifest.from_json({"format": 1, "snapshot": "s", "databases": "x"})
Traceback (most recent call last):
...
frameport._backup._entries.Misshapen: databases is not a list
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .._core._ids import is_valid_id
from .._core._json import JsonObject

FORMAT = 1
"""The archive format this version of frameport writes and reads."""

Record = JsonObject
"""A record as the service sent it (kept whole: a restore sends it back)."""

Selected = dict[str, list[str] | None]
"""The IDs a backup chose, per kind (`Selection.to_json`)."""


class Misshapen(ValueError):
    """An entry not as it should be: the message names it."""


@dataclass(frozen=True, slots=True)
class _Json:
    """A JSON object of an archive's file, with its place in it (``databases[0].``)."""

    data: JsonObject
    where: str = ""

    @classmethod
    def top(cls, value: object) -> _Json:
        if not isinstance(value, dict):
            raise Misshapen("it is not a JSON object")
        return cls(value)

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def field(self, key: str) -> Any:
        if key not in self.data:
            raise Misshapen(f"{self.where}{key} is missing")
        return self.data[key]

    def object(self, key: str) -> _Json:
        value = self.field(key)
        if not isinstance(value, dict):
            raise Misshapen(f"{self.where}{key} is not an object")
        return _Json(value, f"{self.where}{key}.")

    def optional(self, key: str) -> _Json | None:
        """The object `key`, if it is there and not null."""
        return None if self.data.get(key) is None else self.object(key)

    def objects(self, key: str) -> list[_Json]:
        """The objects of the list `key`, each with its place (``key[i].``)."""
        value = self.field(key)
        if not isinstance(value, list):
            raise Misshapen(f"{self.where}{key} is not a list")
        found = []
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                raise Misshapen(f"{self.where}{key}[{index}] is not an object")
            found.append(_Json(item, f"{self.where}{key}[{index}]."))
        return found

    def dicts(self, key: str) -> tuple[Record, ...]:
        """The objects of the list `key`, as they are."""
        return tuple(dict(item.data) for item in self.objects(key))

    def text(self, key: str) -> str:
        value = self.field(key)
        if not isinstance(value, str):
            raise Misshapen(f"{self.where}{key} is not text")
        return value

    def record(self, key: str = "record") -> Record:
        """The service's record `key`, its ``$id`` one the service takes."""
        record = self.object(key)
        if not is_valid_id(record.field("$id")):
            raise Misshapen(f"{record.where}$id is not an ID")
        return dict(record.data)

    def hashes(self, key: str) -> dict[str, FileHash]:
        return {
            name: FileHash.from_json(entry, f"{self.where}{key}[{name!r}]")
            for name, entry in self.object(key).data.items()
        }


def _json_object(items: list[tuple[str, Any]]) -> JsonObject:
    """The JSON object of a record's fields, lists for tuples (a full layer's, with no
    ``held`` file, has no ``held`` key, as archives always had)."""
    return {
        key: list(value) if isinstance(value, tuple) else value
        for key, value in items
        if value is not None or key != "held"
    }


class _Entry:
    """A record of an archive, written as the JSON object of its fields."""

    __slots__ = ()

    def to_json(self) -> JsonObject:
        data: JsonObject = asdict(self, dict_factory=_json_object)  # type: ignore[call-overload]
        return data


@dataclass(frozen=True, slots=True)
class FileHash(_Entry):
    """The SHA-256 and size of a file of the archive."""

    sha256: str
    bytes: int

    @classmethod
    def from_json(cls, value: object, where: str) -> FileHash:
        if not isinstance(value, dict):
            raise Misshapen(f"{where} is not an object")
        entry = _Json(value, f"{where}.")
        sha256 = entry.text("sha256")
        size = entry.field("bytes")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise Misshapen(f"{where}.bytes is not a size")
        return cls(sha256, size)


@dataclass(frozen=True, slots=True)
class FilePart(_Entry):
    """A Parquet file of a layer (its rows, the ``$id``s gone, the ``$sequence``s held): its
    name in the archive, and the rows, SHA-256 and size the backup found in it."""

    path: str
    rows: int | None = None
    sha256: str | None = None
    bytes: int | None = None

    @classmethod
    def from_json(cls, entry: _Json) -> FilePart:
        return cls(entry.text("path"), entry.get("rows"), entry.get("sha256"), entry.get("bytes"))

    @property
    def hash(self) -> FileHash:
        return FileHash(self.sha256 or "", self.bytes or 0)


@dataclass(frozen=True, slots=True)
class Layer(_Entry):
    """The rows one snapshot read of a table (see `_manifest`)."""

    rows: FilePart
    gone: FilePart | None = None
    held: FilePart | None = None
    snapshot: str | None = None

    @classmethod
    def from_json(cls, entry: _Json) -> Layer:
        rows = FilePart.from_json(entry.object("rows"))
        gone, held = (entry.optional(part) for part in ("gone", "held"))
        return cls(
            rows,
            None if gone is None else FilePart.from_json(gone),
            None if held is None else FilePart.from_json(held),
            entry.get("snapshot"),
        )

    @property
    def parts(self) -> list[FilePart]:
        """Its rows and its gone ``$id``s (what a restore reads)."""
        return [part for part in (self.rows, self.gone) if part is not None]


@dataclass(frozen=True, slots=True)
class WrittenLayer(_Entry):
    """A table's layer written by a backup, and the rows the table then holds (kept beside
    it as ``layer.json``, so that a run again after a crash does not read it again)."""

    layer: Layer
    rows: int

    @classmethod
    def from_json(cls, value: object) -> WrittenLayer:
        entry = _Json.top(value)
        return cls(Layer.from_json(entry.object("layer")), int(entry.field("rows")))


def _table_record(entry: _Json) -> Record:
    record = entry.record()
    for key in ("columns", "indexes"):
        if key in record:
            for item in entry.object("record").objects(key):
                item.text("key")
                item.text("type")
    return record


@dataclass(frozen=True, slots=True)
class TableEntry(_Entry):
    """A table of a snapshot: its record, the rows it holds (read up to the ``$sequence``
    `bound`, at the service's `time`), its layers, oldest first, and a hash of their
    contents."""

    record: Record
    layers: tuple[Layer, ...]
    rows: int = 0
    bound: int | None = None
    time: str | None = None
    content_hash: str | None = None

    @classmethod
    def from_json(cls, entry: _Json) -> TableEntry:
        record = _table_record(entry)
        layers = tuple(Layer.from_json(layer) for layer in entry.objects("layers"))
        if not layers:
            raise Misshapen(f"{entry.where}layers is empty")
        return cls(
            record,
            layers,
            int(entry.get("rows") or 0),
            entry.get("bound"),
            entry.get("time"),
            entry.get("content_hash"),
        )


@dataclass(frozen=True, slots=True)
class DatabaseEntry(_Entry):
    record: Record
    tables: tuple[TableEntry, ...]

    @classmethod
    def from_json(cls, entry: _Json) -> DatabaseEntry:
        record = entry.record()
        return cls(record, tuple(TableEntry.from_json(t) for t in entry.objects("tables")))


@dataclass(frozen=True, slots=True)
class FileEntry(_Entry):
    """A file of a bucket: its record and its content's name in the archive."""

    record: Record
    path: str

    @classmethod
    def from_json(cls, entry: _Json) -> FileEntry:
        return cls(entry.record(), entry.text("path"))


@dataclass(frozen=True, slots=True)
class BucketEntry(_Entry):
    record: Record
    files: tuple[FileEntry, ...]

    @classmethod
    def from_json(cls, entry: _Json) -> BucketEntry:
        return cls(entry.record(), tuple(FileEntry.from_json(f) for f in entry.objects("files")))


@dataclass(frozen=True, slots=True)
class FunctionEntry(_Entry):
    """A function, its active deployment (None: none) and that code's name in the archive."""

    record: Record
    deployment: Record | None = None
    path: str | None = None

    @classmethod
    def from_json(cls, entry: _Json) -> FunctionEntry:
        record = entry.record()
        entry.object("record").text("runtime")
        if entry.field("deployment") is None:
            return cls(record)
        return cls(record, dict(entry.object("deployment").data), entry.text("path"))


@dataclass(frozen=True, slots=True)
class DatabaseRecords(_Entry):
    """A database and its tables' records, as the service describes them."""

    record: Record
    tables: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class BucketRecords(_Entry):
    record: Record
    files: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class ProjectRecords(_Entry):
    """What a project holds (see `_project`): its databases with their tables, its buckets
    with their files, and its functions with their active deployment."""

    databases: tuple[DatabaseRecords, ...] = ()
    buckets: tuple[BucketRecords, ...] = ()
    functions: tuple[FunctionEntry, ...] = ()

    @classmethod
    def from_json(cls, entry: _Json) -> ProjectRecords:
        databases = (
            DatabaseRecords(d.record(), d.dicts("tables")) for d in entry.objects("databases")
        )
        buckets = (BucketRecords(b.record(), b.dicts("files")) for b in entry.objects("buckets"))
        functions = (
            FunctionEntry(f.record(), f.get("deployment")) for f in entry.objects("functions")
        )
        return cls(tuple(databases), tuple(buckets), tuple(functions))


@dataclass(frozen=True, slots=True)
class Plan(_Entry):
    """What a backup fixed when it started (``plan.json``): its `snapshot` and the one it is
    incremental on (`base`), the service's `time` and what it is (`service`), the
    `selection`, the `project`'s records and each table's last ``$sequence`` (`bounds`, by
    ``database/table``)."""

    snapshot: str
    base: str | None
    time: str | None
    service: dict[str, str | None]
    selection: Selected
    project: ProjectRecords
    bounds: dict[str, int | None]
    format: int = FORMAT

    @classmethod
    def from_json(cls, value: object) -> Plan:
        entry = _Json.top(value)
        return cls(
            entry.text("snapshot"),
            entry.get("base"),
            entry.get("time"),
            dict(entry.object("service").data),
            entry.field("selection"),
            ProjectRecords.from_json(entry.object("project")),
            dict(entry.object("bounds").data),
        )


@dataclass(frozen=True, slots=True)
class Manifest(_Entry):
    """What a complete snapshot holds (``manifest.json``): see `_manifest`. `files` maps
    every file it needs to its SHA-256 and size."""

    snapshot: str
    databases: tuple[DatabaseEntry, ...] = ()
    buckets: tuple[BucketEntry, ...] = ()
    functions: tuple[FunctionEntry, ...] = ()
    files: dict[str, FileHash] = field(default_factory=dict)
    base: str | None = None
    time: str | None = None
    service: dict[str, str | None] | None = None
    selection: Selected | None = None
    format: int = FORMAT

    @classmethod
    def from_json(cls, value: object) -> Manifest:
        entry = _Json.top(value)
        snapshot = entry.text("snapshot")
        return cls(
            snapshot,
            tuple(DatabaseEntry.from_json(d) for d in entry.objects("databases")),
            tuple(BucketEntry.from_json(b) for b in entry.objects("buckets")),
            tuple(FunctionEntry.from_json(f) for f in entry.objects("functions")),
            entry.hashes("files"),
            entry.get("base"),
            entry.get("time"),
            entry.get("service"),
            entry.get("selection"),
        )

    def tables(self) -> list[tuple[Record, TableEntry]]:
        """(database record, table entry) of every table."""
        return [(db.record, table) for db in self.databases for table in db.tables]

    def table(self, database_id: str, table_id: str) -> TableEntry | None:
        for database, table in self.tables():
            if database["$id"] == database_id and table.record["$id"] == table_id:
                return table
        return None

    def opened_names(self) -> list[str]:
        """The name of every file a restore of the snapshot opens (its tables' layers, its
        files' contents and its functions' code) or a backup on it (the ``held`` file of
        each table's last layer)."""
        names = [
            part.path
            for _, table in self.tables()
            for layer in table.layers
            for part in (*layer.parts, layer.held if layer is table.layers[-1] else None)
            if part is not None
        ]
        names += [file.path for bucket in self.buckets for file in bucket.files]
        names += [f.path for f in self.functions if f.deployment is not None and f.path]
        return names

    def project(self) -> ProjectRecords:
        """The records of what the snapshot holds."""
        return ProjectRecords(
            tuple(
                DatabaseRecords(db.record, tuple(t.record for t in db.tables))
                for db in self.databases
            ),
            tuple(BucketRecords(b.record, tuple(f.record for f in b.files)) for b in self.buckets),
            tuple(FunctionEntry(f.record, f.deployment) for f in self.functions),
        )


@dataclass(frozen=True, slots=True)
class Hashes(_Entry):
    """The SHA-256 and size of a snapshot's manifest and plan (``hashes.json``)."""

    files: dict[str, FileHash]
    format: int = FORMAT

    @classmethod
    def from_json(cls, value: object) -> Hashes:
        return cls(_Json.top(value).hashes("files"))
