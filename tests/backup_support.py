"""A small project to back up, restore and copy, and the field-by-field comparison of two
projects (schema, indexes, permissions, rows with every `$` field, files byte for byte)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import frameport as fp
from frameport import Client, Permission, Role

CODE = {"main.py": "def main(context):\n    return context.res.text('hi')\n"}

# Fields the destination sets itself: the times of what it creates, and the rows' numbers.
_MADE_BY_DESTINATION = {"$createdAt", "$updatedAt", "$sequence", "bytesUsed", "bytesMax"}


@dataclass(frozen=True)
class Project:
    database: str
    tables: tuple[str, ...]
    bucket: str
    function: str


def people_frame(rows: int, seed: int = 1) -> pd.DataFrame:
    generator = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "name": [f"person {i}" for i in range(rows)],
            "age": pd.array(generator.integers(0, 90, rows), dtype="Int64"),
            "score": generator.random(rows),
            "member": generator.random(rows) > 0.5,
            "joined": pd.to_datetime(
                pd.Series(generator.integers(1_500_000_000_000, 1_700_000_000_000, rows)),
                unit="ms",
                utc=True,
            ),
        }
    )


def make_project(client: Client, tmp_path: Path, rows: int = 300) -> Project:
    """A database with two tables (indexes, permissions, row security, a disabled table,
    rows with their own permissions), a bucket with three files and a function with code."""
    database = fp.ID.unique()
    people = client.create_table(
        database, "people", schema=people_frame(1), permissions=[Permission.read(Role.any())],
        row_security=True,
    )  # fmt: skip
    people.add_column("email", "email")
    people.add_column("kind", "enum", elements=["a", "b"])
    people.add_column("tags", "string(40)[]")
    client._request(
        "POST",
        f"/tablesdb/{database}/tables/people/indexes",
        json={"key": "by_age", "type": "key", "columns": ["age"], "orders": ["DESC"]},
    )
    client._request(
        "POST",
        f"/tablesdb/{database}/tables/people/indexes",
        json={"key": "one_name", "type": "unique", "columns": ["name"]},
    )
    frame = people_frame(rows)
    frame["email"] = pd.Series([f"p{i}@example.com" if i % 3 else None for i in range(rows)])
    frame["kind"] = pd.Series(["a" if i % 2 else "b" for i in range(rows)])
    frame["tags"] = pd.Series([[f"t{i % 5}", "x"] if i % 4 else [] for i in range(rows)])
    frame["$permissions"] = [
        (Permission.read(Role.user(f"u{i}")),) if i % 7 == 0 else () for i in range(rows)
    ]
    people.insert(frame, progress=False)
    notes = client.create_table(database, "notes", schema={"text": "string(200)"})
    notes.insert(pd.DataFrame({"text": ["one", "two", None]}), progress=False)
    client._request(
        "PUT",
        f"/tablesdb/{database}/tables/notes",
        json={"name": "Notes", "enabled": False, "rowSecurity": False},
    )
    bucket = client.create_bucket(fp.ID.unique(), "files", file_security=True,
                                  permissions=[Permission.read(Role.users())])  # fmt: skip
    bucket.upload_bytes(
        b"a,b\n1,2\n", "small.csv", file_id="small", permissions=[Permission.read(Role.any())]
    )
    (tmp_path / "big.bin").write_bytes(np.random.default_rng(3).bytes(6 * 1024 * 1024 + 17))
    bucket.upload_file(tmp_path / "big.bin", file_id="big", progress=False)
    bucket.upload_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 100, "picture.png", file_id="picture")
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    for name, text in CODE.items():
        (code / name).write_text(text)
    function = client.create_function(fp.ID.unique(), "etl", "python-3.12", entrypoint="main.py")
    function.wait(function.deploy(code, entrypoint="main.py", progress=False).id)
    return Project(database, ("people", "notes"), bucket.id, function.id)


def _stripped(record: Any) -> Any:
    if isinstance(record, dict):
        return {k: _stripped(v) for k, v in record.items() if k not in _MADE_BY_DESTINATION}
    if isinstance(record, list):
        return [_stripped(item) for item in record]
    return record


def table_rows(client: Client, database: str, table: str) -> pd.DataFrame:
    rows = client.table(database, table).to_pandas(progress=False, system=True)
    return rows.drop(columns=["$sequence"]).sort_values("$id").reset_index(drop=True)


def assert_same_project(source: Client, copy: Client, project: Project) -> None:
    """The two projects hold the same schema, indexes, permissions, rows (every `$` field but
    `$sequence`), bucket settings, files (byte for byte) and function code."""
    db = project.database
    assert _stripped(source._request_json("GET", f"/tablesdb/{db}")) == _stripped(
        copy._request_json("GET", f"/tablesdb/{db}")
    )
    for table in project.tables:
        path = f"/tablesdb/{db}/tables/{table}"
        assert _stripped(source._request_json("GET", path)) == _stripped(
            copy._request_json("GET", path)
        )
        pd.testing.assert_frame_equal(table_rows(source, db, table), table_rows(copy, db, table))
    bucket_path = f"/storage/buckets/{project.bucket}"
    assert _stripped(source._request_json("GET", bucket_path)) == _stripped(
        copy._request_json("GET", bucket_path)
    )
    times = ["$createdAt", "$updatedAt"]
    files = source.bucket(project.bucket).list_files(details=True).drop(columns=times)
    copied = copy.bucket(project.bucket).list_files(details=True).drop(columns=times)
    pd.testing.assert_frame_equal(
        files.sort_values("$id").reset_index(drop=True),
        copied.sort_values("$id").reset_index(drop=True),
    )
    for file_id in files["$id"]:
        assert source.bucket(project.bucket).download(file_id) == copy.bucket(
            project.bucket
        ).download(file_id)
    function = _stripped(source._request_json("GET", f"/functions/{project.function}"))
    copied_function = _stripped(copy._request_json("GET", f"/functions/{project.function}"))
    for made in ("deploymentId", "deployment", "latestDeploymentId", "deploymentCreatedAt",
                 "latestDeploymentCreatedAt"):  # fmt: skip
        function.pop(made), copied_function.pop(made)
    assert function == copied_function


def assert_same_code(source: Client, copy: Client, function_id: str, tmp_path: Path) -> None:
    """The active deployments of the function hold the same code archive, byte for byte."""
    paths = []
    for number, client in enumerate((source, copy)):
        active = client._request_json("GET", f"/functions/{function_id}")["deploymentId"]
        path = tmp_path / f"code-{number}.tar.gz"
        client.function(function_id).download_deployment(active, path, progress=False)
        paths.append(path)
    assert paths[0].read_bytes() == paths[1].read_bytes()
