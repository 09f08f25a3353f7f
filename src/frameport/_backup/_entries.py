"""The records of an archive, each read from its JSON and written back as the same JSON; the
service's own records are kept as it sent them (`Record`).

Reading one checks each entry a restore or `verify` uses is there and of its kind, each ID
one the service takes; what is not raises `Misshapen` naming its place:

>>> Manifest.from_json({"format": 1, "snapshot": "s", "databases": "x"})
Traceback (most recent call last):
...
frameport._backup._entries.Misshapen: databases is not a list
"""

from __future__ import annotations

from dataclasses import MISSING, Field, asdict, dataclass, fields
from functools import cache
from types import UnionType
from typing import Any, Generic, Self, TypeVar, get_args, get_origin, get_type_hints

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
    def at(cls, value: object, where: str = "") -> _Json:
        """`value`, which must be an object, found at `where` (``databases[0]``)."""
        if not isinstance(value, dict):
            raise Misshapen(f"{where} is not an object" if where else "it is not a JSON object")
        return cls(value, f"{where}." if where else "")

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def field(self, key: str) -> Any:
        if key not in self.data:
            raise Misshapen(f"{self.where}{key} is missing")
        return self.data[key]

    def object(self, key: str) -> _Json:
        return _Json.at(self.field(key), f"{self.where}{key}")

    def objects(self, key: str) -> list[_Json]:
        """The objects of the list `key`, each with its place (``key[i].``)."""
        value = self.field(key)
        if not isinstance(value, list):
            raise Misshapen(f"{self.where}{key} is not a list")
        return [_Json.at(item, f"{self.where}{key}[{i}]") for i, item in enumerate(value)]

    def text(self, key: str) -> str:
        value = self.field(key)
        if not isinstance(value, str):
            raise Misshapen(f"{self.where}{key} is not text")
        return value

    def count(self, key: str) -> int:
        value = self.field(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise Misshapen(f"{self.where}{key} is not a count")
        return value

    def record(self) -> Record:
        """The object as a service's record, its ``$id`` one the service takes."""
        if not is_valid_id(self.field("$id")):
            raise Misshapen(f"{self.where}$id is not an ID")
        return dict(self.data)


_E = TypeVar("_E", bound="_Entry")
_T = TypeVar("_T")


@cache
def _fields(cls: type[_Entry]) -> list[tuple[Field[Any], Any]]:
    """The fields of the entry class `cls`, each with its type."""
    hints = get_type_hints(cls)
    return [(item, hints[item.name]) for item in fields(cls)]  # type: ignore[arg-type]


def _read(cls: type[_E], entry: _Json, of: Any = None) -> _E:
    """The entry `cls` from its JSON object, each field read as its type says (`of`: the
    type of its items, for a database's or bucket's): a field that may be None, or has a
    default, may be missing or null."""
    values: dict[str, Any] = {}
    for item, hint in _fields(cls):  # type: ignore[arg-type]  # (a class is hashable)
        optional = get_origin(hint) is UnionType
        if entry.get(item.name) is None and (optional or item.default is not MISSING):
            values[item.name] = None if item.default is MISSING else item.default
        else:
            values[item.name] = _typed(
                get_args(hint)[0] if optional else hint, entry, item.name, of
            )
    made = cls(**values)
    made.check(entry)
    return made


def _typed(hint: Any, entry: _Json, key: str, of: Any) -> Any:
    """The value `key` of `entry`, read as the type `hint` says."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is str:
        return entry.text(key)
    if hint is int:
        return entry.count(key)
    if origin is tuple:
        kind = of if isinstance(args[0], TypeVar) else args[0]
        return tuple(_item(kind, item) for item in entry.objects(key))
    if origin is dict and args[1] is FileHash:
        return {
            name: _read(FileHash, _Json.at(value, f"{entry.where}{key}[{name!r}]"))
            for name, value in entry.object(key).data.items()
        }
    return _item(hint, entry.object(key))


def _item(hint: Any, entry: _Json) -> Any:
    """The object `entry` as the type `hint`: an entry, a service's record or a plain object."""
    entry_class = get_origin(hint) or hint
    if isinstance(entry_class, type) and issubclass(entry_class, _Entry):
        return _read(entry_class, entry, *get_args(hint))
    return entry.record() if get_args(hint) == (str, Any) else dict(entry.data)


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

    @classmethod
    def from_json(cls, value: object) -> Self:
        return _read(cls, _Json.at(value))

    def to_json(self) -> JsonObject:
        data: JsonObject = asdict(self, dict_factory=_json_object)  # type: ignore[call-overload]
        return data

    def check(self, entry: _Json) -> None:
        """Check what its fields' types do not say (`entry`: its JSON)."""


@dataclass(frozen=True, slots=True)
class FileHash(_Entry):
    """The SHA-256 and size of a file of the archive."""

    sha256: str
    bytes: int


@dataclass(frozen=True, slots=True)
class FilePart(_Entry):
    """A Parquet file of a layer (its rows, the ``$id``s gone, the ``$sequence``s held): its
    name in the archive, and the rows, SHA-256 and size the backup found in it."""

    path: str
    rows: int | None = None
    sha256: str | None = None
    bytes: int | None = None

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


@dataclass(frozen=True, slots=True)
class TableEntry(_Entry):
    """A table of a snapshot, read up to the ``$sequence`` `bound` at the service's `time`;
    its layers oldest first."""

    record: Record
    layers: tuple[Layer, ...]
    rows: int = 0
    bound: int | None = None
    time: str | None = None
    content_hash: str | None = None

    def check(self, entry: _Json) -> None:
        if not self.layers:
            raise Misshapen(f"{entry.where}layers is empty")
        record = entry.object("record")
        for key in ("columns", "indexes"):
            for item in record.objects(key) if key in record.data else []:
                item.text("key")
                item.text("type")


@dataclass(frozen=True, slots=True)
class DatabaseEntry(_Entry, Generic[_T]):
    """A database and its tables: their records in a plan, their entries in a manifest."""

    record: Record
    tables: tuple[_T, ...]


@dataclass(frozen=True, slots=True)
class FileEntry(_Entry):
    """A file of a bucket: its record and its content's name in the archive."""

    record: Record
    path: str


@dataclass(frozen=True, slots=True)
class BucketEntry(_Entry, Generic[_T]):
    """A bucket and its files: their records in a plan, their entries in a manifest."""

    record: Record
    files: tuple[_T, ...]


@dataclass(frozen=True, slots=True)
class FunctionEntry(_Entry):
    """A function, its active deployment (None: none) and that code's name in the archive."""

    record: Record
    deployment: Record | None = None
    path: str | None = None

    def check(self, entry: _Json) -> None:
        entry.object("record").text("runtime")


@dataclass(frozen=True, slots=True)
class ProjectRecords(_Entry):
    """What a project holds (see `_project`)."""

    databases: tuple[DatabaseEntry[Record], ...]
    buckets: tuple[BucketEntry[Record], ...]
    functions: tuple[FunctionEntry, ...]


@dataclass(frozen=True, slots=True)
class Plan(_Entry):
    """What a backup fixed when it started (``plan.json``); `base`: the snapshot it is
    incremental on, `bounds`: each table's last ``$sequence``, by ``database/table``."""

    snapshot: str
    base: str | None
    time: str | None
    service: dict[str, str | None]
    selection: Selected
    project: ProjectRecords
    bounds: dict[str, int | None]
    format: int = FORMAT


@dataclass(frozen=True, slots=True)
class Manifest(_Entry):
    """What a complete snapshot holds (``manifest.json``): see `_manifest`. `files` maps
    every file it needs to its SHA-256 and size."""

    snapshot: str
    databases: tuple[DatabaseEntry[TableEntry], ...]
    buckets: tuple[BucketEntry[FileEntry], ...]
    functions: tuple[FunctionEntry, ...]
    files: dict[str, FileHash]
    base: str | None = None
    time: str | None = None
    service: dict[str, str | None] | None = None
    selection: Selected | None = None
    format: int = FORMAT

    def check(self, entry: _Json) -> None:
        """A function with code names it (its plan's records, which are alike, do not)."""
        for function, item in zip(self.functions, entry.objects("functions"), strict=True):
            if function.deployment is not None:
                item.text("path")

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
                DatabaseEntry(db.record, tuple(t.record for t in db.tables))
                for db in self.databases
            ),
            tuple(BucketEntry(b.record, tuple(f.record for f in b.files)) for b in self.buckets),
            tuple(FunctionEntry(f.record, f.deployment) for f in self.functions),
        )


@dataclass(frozen=True, slots=True)
class Hashes(_Entry):
    """The SHA-256 and size of a snapshot's manifest and plan (``hashes.json``)."""

    files: dict[str, FileHash]
    format: int = FORMAT
