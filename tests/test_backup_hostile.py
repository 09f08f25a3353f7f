"""Archives edited or damaged on purpose: every path a restore would open must be a file
inside the archive (links included) that the manifest lists with its hash, the manifest and
the plan are hashed too, what cannot be read is an `ArchiveError` naming it, and a table's
layer of one huge row group is read in bounded batches."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import frameport as fp
from frameport import ArchiveError, Client
from frameport.local import LocalService

NAME_SIZE = 4000


@dataclass(frozen=True)
class Source:
    client: Client
    database: str
    bucket: str
    pristine: Path


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    """A small project (a table of 3 rows, a bucket with a file, a function with code) and
    an archive of it."""
    folder = tmp_path_factory.mktemp("source")
    with LocalService() as service, service.client() as client:
        database = fp.ID.unique()
        people = client.create_table(database, "people", schema={"name": f"string({NAME_SIZE})"})
        people.insert(
            pd.DataFrame({"$id": ["ada", "bob", "cy"], "name": ["Ada", "Bob", "Cy"]}),
            progress=False,
        )
        bucket = client.create_bucket(fp.ID.unique(), "files")
        bucket.upload_bytes(b"hello", "hello.txt", file_id="hello")
        code = folder / "code"
        code.mkdir()
        (code / "main.py").write_text("def main(context):\n    return context.res.text('hi')\n")
        function = client.create_function(
            fp.ID.unique(), "etl", "python-3.12", entrypoint="main.py"
        )
        function.wait(function.deploy(code, entrypoint="main.py", progress=False).id)
        pristine = folder / "archive"
        client.backup(pristine, progress=False)
        yield Source(client, database, bucket.id, pristine)


@pytest.fixture
def archive(source: Source, tmp_path: Path) -> Path:
    """A copy of the source's archive, to edit."""
    copy = tmp_path / "archive"
    shutil.copytree(source.pristine, copy)
    (tmp_path / "outside").mkdir()
    return copy


@pytest.fixture
def destination() -> Iterator[Client]:
    with LocalService() as service, service.client() as client:
        yield client


# ---------------------------------------------------------------------------------------------
# Editing an archive as someone who rewrites its hashes would


def _snapshot(archive: Path) -> Path:
    (folder,) = (archive / "snapshots").iterdir()
    return folder


def _manifest(archive: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((_snapshot(archive) / "manifest.json").read_text())
    return manifest


def _entry(path: Path) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "bytes": path.stat().st_size}


def _named(manifest: dict[str, Any]) -> list[str]:
    """Every path the manifest names."""
    names = list(manifest["files"])
    names += [file["path"] for bucket in manifest["buckets"] for file in bucket["files"]]
    names += [function["path"] for function in manifest["functions"] if function["path"]]
    for database in manifest["databases"]:
        for table in database["tables"]:
            for layer in table["layers"]:
                names += [
                    layer[part]["path"] for part in ("rows", "gone", "held") if layer.get(part)
                ]
    return names


def _reseal(archive: Path) -> None:
    """The hashes of the manifest and the plan made to match what they hold now."""
    folder = _snapshot(archive)
    relative = folder.relative_to(archive).as_posix()
    files = {f"{relative}/{name}": _entry(folder / name) for name in ("manifest.json", "plan.json")}
    (folder / "hashes.json").write_text(json.dumps({"format": 1, "files": files}))


def _write(archive: Path, manifest: Any, *, rehash: bool = True, listed: bool = True) -> None:
    """Write `manifest` into the archive; `rehash`: with the hashes made to match (each path
    it names listed with its hash, unless not `listed`, and the manifest's own)."""
    if rehash and listed:
        for name in _named(manifest):
            if (archive / name).is_file():
                manifest["files"][name] = _entry(archive / name)
    text = manifest if isinstance(manifest, str) else json.dumps(manifest, indent=1)
    (_snapshot(archive) / "manifest.json").write_text(text)
    if rehash:
        _reseal(archive)


def _evil_rows(archive: Path, path: Path, names: list[str] | None = None) -> None:
    """A Parquet file of the people table's shape, its rows named "evil"."""
    (rows,) = archive.glob("snapshots/*/tables/*/people/rows.parquet")
    table = pq.read_table(rows)
    evil = names or ["evil"] * table.num_rows
    pq.write_table(table.set_column(table.schema.get_field_index("name"), "name",
                                    pa.array(evil)), path)  # fmt: skip


def _people_layer(manifest: dict[str, Any]) -> dict[str, Any]:
    layer: dict[str, Any] = manifest["databases"][0]["tables"][0]["layers"][0]
    return layer


def _refused(report: fp.VerifyReport, name: str, reason: str) -> bool:
    return any(problem.startswith(f"{name}: ") and reason in problem for problem in report.problems)


def _assert_restore_refused(destination: Client, archive: Path, name: str) -> None:
    with pytest.raises(ArchiveError, match=re.escape(name)) as refused:
        destination.restore(archive, progress=False)
    assert any(name in problem for problem in refused.value.problems)
    assert destination.databases().empty and destination.buckets().empty  # nothing written


# ---------------------------------------------------------------------------------------------
# Closed archives


def _lead_bucket_file_out(archive: Path, manifest: dict[str, Any]) -> str:
    (archive.parent / "outside" / "secret.txt").write_text("a secret of this machine")
    manifest["buckets"][0]["files"][0]["path"] = "../outside/secret.txt"
    return "../outside/secret.txt"


def _lead_function_code_out(archive: Path, manifest: dict[str, Any]) -> str:
    shutil.copy(archive / manifest["functions"][0]["path"], archive.parent / "outside/code.tar.gz")
    manifest["functions"][0]["path"] = "../outside/code.tar.gz"
    return "../outside/code.tar.gz"


def _lead_layer_out(archive: Path, manifest: dict[str, Any]) -> str:
    _evil_rows(archive, archive.parent / "outside" / "evil.parquet")
    _people_layer(manifest)["rows"]["path"] = "../outside/evil.parquet"
    return "../outside/evil.parquet"


def _lead_layer_to_an_absolute_path(archive: Path, manifest: dict[str, Any]) -> str:
    path = archive.parent / "outside" / "evil.parquet"
    _evil_rows(archive, path)
    _people_layer(manifest)["rows"]["path"] = path.as_posix()
    return path.as_posix()


@pytest.mark.parametrize(
    "lead_out",
    [_lead_bucket_file_out, _lead_function_code_out, _lead_layer_out,
     _lead_layer_to_an_absolute_path],
    ids=["bucket file", "function code", "table layer", "absolute layer"],
)  # fmt: skip
def test_a_path_out_of_the_archive_is_refused_by_verify_and_restore(
    archive: Path, destination: Client, lead_out: Callable[[Path, dict[str, Any]], str]
) -> None:
    manifest = _manifest(archive)
    name = lead_out(archive, manifest)
    _write(archive, manifest)  # its hash listed, as someone editing the archive would

    report = fp.verify(archive)
    assert not report.ok
    assert _refused(report, name, "not a relative path inside the archive"), report.problems
    _assert_restore_refused(destination, archive, name)


def test_a_link_leading_out_of_the_archive_is_refused_though_its_hash_was_updated(
    archive: Path, destination: Client
) -> None:
    manifest = _manifest(archive)
    name = _people_layer(manifest)["rows"]["path"]
    evil = archive.parent / "outside" / "evil.parquet"
    _evil_rows(archive, evil)
    (archive / name).unlink()
    (archive / name).symlink_to(evil)
    _people_layer(manifest)["rows"].update(_entry(evil))
    _write(archive, manifest)

    report = fp.verify(archive)
    assert not report.ok and _refused(report, name, "leads out of the archive"), report.problems
    _assert_restore_refused(destination, archive, name)


def test_a_link_inside_the_archive_is_followed(
    source: Source, archive: Path, destination: Client
) -> None:
    manifest = _manifest(archive)
    name = _people_layer(manifest)["rows"]["path"]
    (archive / "moved.parquet").write_bytes((archive / name).read_bytes())
    (archive / name).unlink()
    (archive / name).symlink_to(archive / "moved.parquet")
    assert fp.verify(archive).ok
    assert destination.restore(archive, progress=False).written == 3


def test_a_path_the_manifest_does_not_list_with_a_hash_is_refused(
    archive: Path, destination: Client
) -> None:
    manifest = _manifest(archive)
    _evil_rows(archive, archive / "extra.parquet")
    _people_layer(manifest)["rows"]["path"] = "extra.parquet"
    _write(archive, manifest, listed=False)

    report = fp.verify(archive)
    assert not report.ok and _refused(report, "extra.parquet", "not listed"), report.problems
    _assert_restore_refused(destination, archive, "extra.parquet")


def test_permissions_made_public_in_the_manifest_are_caught_by_verify_and_refused(
    source: Source, archive: Path, destination: Client
) -> None:
    manifest = _manifest(archive)
    manifest["buckets"][0]["record"]["$permissions"] = ['read("any")']
    manifest["databases"][0]["tables"][0]["record"]["$permissions"] = ['read("any")']
    _write(archive, manifest, rehash=False)
    name = (_snapshot(archive) / "manifest.json").relative_to(archive).as_posix()

    report = fp.verify(archive)
    assert not report.ok and report.altered == [name]
    _assert_restore_refused(destination, archive, name)


def test_an_edited_plan_is_caught_by_verify_and_refused(archive: Path, destination: Client) -> None:
    plan_path = _snapshot(archive) / "plan.json"
    plan = json.loads(plan_path.read_text())
    plan["project"]["buckets"][0]["record"]["$permissions"] = ['read("any")']
    plan_path.write_text(json.dumps(plan))
    name = plan_path.relative_to(archive).as_posix()

    report = fp.verify(archive)
    assert not report.ok and report.altered == [name]
    _assert_restore_refused(destination, archive, name)


def test_an_archive_written_before_manifests_were_hashed_still_verifies_and_restores(
    source: Source, archive: Path, destination: Client
) -> None:
    (_snapshot(archive) / "hashes.json").unlink()
    report = fp.verify(archive)
    assert report.ok and report.unhashed == [_snapshot(archive).name]
    assert "manifest and plan carry no hash" in report.summary()
    assert destination.restore(archive, progress=False).written == 3


def _active_code(client: Client, function_id: str, path: Path) -> bytes:
    active = client._request_json("GET", f"/functions/{function_id}")["deploymentId"]
    client.function(function_id).download_deployment(active, path, progress=False)
    return path.read_bytes()


@pytest.mark.parametrize("where", ["folder", "url"])
def test_function_code_an_earlier_version_hashed_decompressed_verifies_and_restores(
    source: Source, archive: Path, destination: Client, tmp_path: Path, where: str
) -> None:
    """Earlier versions hashed a ``.tar.gz`` decompressed (pyarrow guessed a compression from
    the name), and compressed it once more into a remote archive; they wrote no hashes of
    manifest and plan."""
    manifest = _manifest(archive)
    (function,) = manifest["functions"]
    name = function["path"]
    code = (archive / name).read_bytes()
    manifest["files"][name]["sha256"] = hashlib.sha256(gzip.decompress(code)).hexdigest()
    target = str(archive)
    if where == "url":
        target = f"memory://backups/{fp.ID.unique()}"
        memory = fsspec.filesystem("memory")
        memory.put(str(archive), target.removeprefix("memory://"), recursive=True)
        stored = gzip.compress(code)
        memory.pipe(f"{target}/{name}", stored)
        manifest["files"][name] = {"sha256": hashlib.sha256(code).hexdigest(),
                                   "bytes": len(stored)}  # fmt: skip
        memory.pipe(f"{target}/{_snapshot(archive).relative_to(archive).as_posix()}/manifest.json",
                    json.dumps(manifest).encode())  # fmt: skip
        memory.rm(f"{target}/{_snapshot(archive).relative_to(archive).as_posix()}/hashes.json")
    else:
        _write(archive, manifest, rehash=False)
        (_snapshot(archive) / "hashes.json").unlink()

    assert fp.verify(target).ok
    destination.restore(target, progress=False)
    deployed = _active_code(destination, function["record"]["$id"], tmp_path / "code.tar.gz")
    assert deployed == code


# ---------------------------------------------------------------------------------------------
# What cannot be read


def _garbage(manifest: dict[str, Any]) -> str:
    return "{this is not JSON"


def _not_an_object(manifest: dict[str, Any]) -> str:
    return "[1, 2, 3]"


def _tables_not_a_list(manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["databases"][0]["tables"] = "people"
    return manifest


def _layer_path_a_number(manifest: dict[str, Any]) -> dict[str, Any]:
    _people_layer(manifest)["rows"]["path"] = 7
    return manifest


def _file_without_path(manifest: dict[str, Any]) -> dict[str, Any]:
    del manifest["buckets"][0]["files"][0]["path"]
    return manifest


def _hash_a_number(manifest: dict[str, Any]) -> dict[str, Any]:
    name = next(iter(manifest["files"]))
    manifest["files"][name]["sha256"] = 12
    return manifest


def _no_layers(manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["databases"][0]["tables"][0]["layers"] = []
    return manifest


def _column_without_key(manifest: dict[str, Any]) -> dict[str, Any]:
    del manifest["databases"][0]["tables"][0]["record"]["columns"][0]["key"]
    return manifest


@pytest.mark.parametrize(
    ("spoil", "entry"),
    [
        (_garbage, "not JSON"),
        (_not_an_object, "not a JSON object"),
        (_tables_not_a_list, "databases[0].tables"),
        (_layer_path_a_number, "databases[0].tables[0].layers[0].rows.path"),
        (_file_without_path, "buckets[0].files[0].path"),
        (_hash_a_number, ".sha256"),
        (_no_layers, "databases[0].tables[0].layers"),
        (_column_without_key, "databases[0].tables[0].record.columns[0].key"),
    ],
)
def test_a_manifest_that_is_not_one_is_an_archive_error_naming_the_entry(
    archive: Path,
    destination: Client,
    spoil: Callable[[dict[str, Any]], Any],
    entry: str,
) -> None:
    _write(archive, spoil(_manifest(archive)), listed=False)  # hashes made to match
    name = (_snapshot(archive) / "manifest.json").relative_to(archive).as_posix()

    report = fp.verify(archive)
    assert not report.ok and _refused(report, name, entry), report.problems
    with pytest.raises(ArchiveError, match=re.escape(entry)):
        destination.restore(archive, progress=False)
    assert destination.databases().empty


def test_unreadable_hashes_of_a_snapshot_are_an_archive_error(
    archive: Path, destination: Client
) -> None:
    hashes = _snapshot(archive) / "hashes.json"
    hashes.write_text('{"files": 3}')
    name = hashes.relative_to(archive).as_posix()
    report = fp.verify(archive)
    assert not report.ok and _refused(report, name, "files"), report.problems
    _assert_restore_refused(destination, archive, name)


@pytest.mark.parametrize("spoil", ["garbage", "no $id"])
def test_a_layer_that_is_not_parquet_of_rows_is_an_archive_error_naming_it(
    archive: Path, destination: Client, spoil: str
) -> None:
    manifest = _manifest(archive)
    name = _people_layer(manifest)["rows"]["path"]
    if spoil == "garbage":
        (archive / name).write_bytes(b"PAR1" + b"\x00" * 200 + b"PAR1")
    else:
        pq.write_table(pa.table({"name": ["x"]}), archive / name)
    _write(archive, manifest)

    assert fp.verify(archive).ok  # its hashes match: the restore finds it out
    with pytest.raises(ArchiveError, match=re.escape(name)):
        destination.restore(archive, progress=False)
    assert destination.databases().empty  # found while planning, before anything is written


# ---------------------------------------------------------------------------------------------
# A layer of one huge row group

BIG_ROWS = 60_000
BIG_VALUE = 2_500

_RESTORE_THEN_PEAK = """
import sys
import pyarrow as pa
import frameport as fp
client = fp.Client.from_env()
try:
    client.restore(sys.argv[1], progress=False)
except fp.ConflictError:
    pass
else:
    sys.exit("the restore was to stop at its first rows")
print(pa.default_memory_pool().max_memory())
"""


def _one_big_row_group(archive: Path, rows: int) -> None:
    """The people layer replaced by `rows` rows in one row group: a few hundred kilobytes
    of Parquet (a dictionary of four names), `rows * BIG_VALUE` bytes read whole."""
    manifest = _manifest(archive)
    name = _people_layer(manifest)["rows"]["path"]
    first = pq.read_table(archive / name).slice(0, 1)
    columns = {field.name: pa.repeat(first.column(field.name)[0], rows) for field in first.schema}
    columns["$id"] = pa.array([f"r{i:06d}" for i in range(rows)])
    columns["$sequence"] = pa.array(np.arange(1, rows + 1))
    names = pa.array([f"{k}" * BIG_VALUE for k in range(4)])
    columns["name"] = pa.DictionaryArray.from_arrays(
        pa.array(np.arange(rows) % 4, pa.int32()), names
    )
    # Without the Arrow schema, the names read back as strings, not a dictionary.
    pq.write_table(pa.table(columns), archive / name, row_group_size=rows, store_schema=False)
    _people_layer(manifest)["rows"].update(_entry(archive / name), rows=rows)
    _write(archive, manifest)


def test_a_layer_of_one_huge_row_group_is_read_in_bounded_batches(
    source: Source, archive: Path
) -> None:
    """The restore stops at its first rows (the destination holds the first, on_conflict
    "fail"): it has read one batch of the layer, not its 100 MB row group."""
    _one_big_row_group(archive, BIG_ROWS)
    assert (archive / _people_layer(_manifest(archive))["rows"]["path"]).stat().st_size < 2**20
    with LocalService() as service, service.client() as destination:
        table = destination.create_table(
            source.database, "people", schema={"name": f"string({NAME_SIZE})"}
        )
        table.insert(pd.DataFrame({"$id": ["r000000"], "name": ["taken"]}), progress=False)
        env = {**os.environ, "FRAMEPORT_ENDPOINT": service.endpoint,
               "FRAMEPORT_PROJECT": service.project, "FRAMEPORT_KEY": service.key}  # fmt: skip
        ran = subprocess.run(
            [sys.executable, "-c", _RESTORE_THEN_PEAK, str(archive)],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    peak = int(ran.stdout.split()[-1])
    whole_group = BIG_ROWS * BIG_VALUE
    assert peak < whole_group / 4, f"Arrow held {peak / 1e6:.0f} MB at its peak"
