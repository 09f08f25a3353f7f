"""The shape a snapshot's manifest and hashes must have before anything reads them: each
entry a restore or `verify` uses is there and of its kind, each ID one the service takes.
What is not names its place (``databases[0].tables[1].layers[0].rows.path``).

>>> manifest_problem({"format": 1, "snapshot": "s", "databases": "x"})
'databases is not a list'
"""

from __future__ import annotations

from typing import Any

from .._core._ids import is_valid_id


class _Misshapen(Exception):
    """An entry not as it should be: the message names it."""


def _field(parent: dict[str, Any], key: str, where: str) -> Any:
    if key not in parent:
        raise _Misshapen(f"{where}{key} is missing")
    return parent[key]


def _object(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = _field(parent, key, where)
    if not isinstance(value, dict):
        raise _Misshapen(f"{where}{key} is not an object")
    return value


def _list(parent: dict[str, Any], key: str, where: str) -> list[Any]:
    value = _field(parent, key, where)
    if not isinstance(value, list):
        raise _Misshapen(f"{where}{key} is not a list")
    return value


def _objects(parent: dict[str, Any], key: str, where: str) -> list[tuple[dict[str, Any], str]]:
    """The objects of the list `key`, each with its place (``key[i].``)."""
    found = []
    for index, item in enumerate(_list(parent, key, where)):
        if not isinstance(item, dict):
            raise _Misshapen(f"{where}{key}[{index}] is not an object")
        found.append((item, f"{where}{key}[{index}]."))
    return found


def _text(parent: dict[str, Any], key: str, where: str) -> str:
    value = _field(parent, key, where)
    if not isinstance(value, str):
        raise _Misshapen(f"{where}{key} is not text")
    return value


def _record(parent: dict[str, Any], where: str) -> dict[str, Any]:
    """The ``record`` of an entry, its ``$id`` one the service takes."""
    record = _object(parent, "record", where)
    if not is_valid_id(_field(record, "$id", f"{where}record.")):
        raise _Misshapen(f"{where}record.$id is not an ID")
    return record


def _hash(entry: Any, where: str) -> None:
    """A file's SHA-256 and size."""
    if not isinstance(entry, dict):
        raise _Misshapen(f"{where} is not an object")
    _text(entry, "sha256", f"{where}.")
    size = _field(entry, "bytes", f"{where}.")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise _Misshapen(f"{where}.bytes is not a size")


def _hashes(parent: dict[str, Any], key: str) -> None:
    for name, entry in _object(parent, key, "").items():
        _hash(entry, f"{key}[{name!r}]")


def _table(table: dict[str, Any], where: str) -> None:
    record = _record(table, where)
    for key in ("columns", "indexes"):
        if key in record:
            for item, place in _objects(record, key, f"{where}record."):
                _text(item, "key", place)
                _text(item, "type", place)
    layers = _objects(table, "layers", where)
    if not layers:
        raise _Misshapen(f"{where}layers is empty")
    for layer, place in layers:
        _text(_object(layer, "rows", place), "path", f"{place}rows.")
        for part in ("gone", "held"):
            if layer.get(part) is not None:
                _text(_object(layer, part, place), "path", f"{place}{part}.")


def _check_manifest(manifest: Any) -> None:
    if not isinstance(manifest, dict):
        raise _Misshapen("it is not a JSON object")
    _text(manifest, "snapshot", "")
    for database, where in _objects(manifest, "databases", ""):
        _record(database, where)
        for table, place in _objects(database, "tables", where):
            _table(table, place)
    for bucket, where in _objects(manifest, "buckets", ""):
        _record(bucket, where)
        for file, place in _objects(bucket, "files", where):
            _record(file, place)
            _text(file, "path", place)
    for function, where in _objects(manifest, "functions", ""):
        _text(_record(function, where), "runtime", f"{where}record.")
        if _field(function, "deployment", where) is not None:
            _object(function, "deployment", where)
            _text(function, "path", where)
    _hashes(manifest, "files")


def manifest_problem(manifest: Any) -> str | None:
    """What makes `manifest` (a JSON document) no manifest (None: nothing)."""
    try:
        _check_manifest(manifest)
    except _Misshapen as exc:
        return str(exc)
    return None


def hashes_problem(hashes: Any) -> str | None:
    """What makes `hashes` (a JSON document) no snapshot's hashes (None: nothing)."""
    try:
        if not isinstance(hashes, dict):
            raise _Misshapen("it is not a JSON object")
        _hashes(hashes, "files")
    except _Misshapen as exc:
        return str(exc)
    return None
