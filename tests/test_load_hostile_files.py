"""Loads of files and frames built to break the reader: JSON nested far deeper than any data,
values larger than a read block, bytes that are no UTF-8, types that change late in a file,
and two frames of one shape resumed one after the other.

A file that could crash the process is read in a process of its own, so a crash fails the
test instead of ending the test run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from frameport import Client, LoadError, Table
from frameport.local import LocalService
from tables_support import new_id

DEPTH = 100_000  # pyarrow's JSON parser overflows its stack from about 30,000 levels
BLOCK = 4 << 20  # the default read block

LOAD_IN_A_PROCESS = textwrap.dedent(
    """
    import sys
    from frameport import Client, LoadError

    database, table, path = sys.argv[1:]
    try:
        Client.from_env().table(database, table).load(path, progress=False)
    except LoadError as error:
        print(f"LoadError: {error}")
    """
)


@pytest.fixture(scope="module")
def database(key_client: Client) -> str:
    name = new_id("hostile")
    key_client.create_database(name)
    return name


@pytest.fixture
def environment(service: LocalService, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "FRAMEPORT_ENDPOINT": service.endpoint,
        "FRAMEPORT_PROJECT": service.project,
        "FRAMEPORT_KEY": service.key,
        "FRAMEPORT_CACHE_DIR": str(tmp_path / "cache"),
    }


def words_table(client: Client, database: str) -> Table:
    return client.create_table(database, new_id("t"), schema={"n": "integer", "word": "string"})


def deep_file(tmp_path: Path) -> Path:
    path = tmp_path / "deep.ndjson"
    deep = b'{"n": 2, "word": ' + b"[" * DEPTH + b"]" * DEPTH + b"}\n"
    path.write_bytes(b'{"n": 1}\n' + deep + b'{"n": 3}\n')
    return path


def test_a_deep_json_line_is_a_load_error_naming_the_line_in_frameport_import(
    key_client: Client, database: str, tmp_path: Path, environment: dict[str, str]
) -> None:
    table = words_table(key_client, database)
    command = [sys.executable, "-m", "frameport", "import", database, table.id]
    done = subprocess.run(
        [*command, str(deep_file(tmp_path))], env=environment, capture_output=True, text=True
    )
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert "line 2" in done.stderr and "nested deeper than 100 levels" in done.stderr
    assert table.count() == 0


def test_a_deep_json_line_is_a_load_error_in_table_load(
    key_client: Client, database: str, tmp_path: Path, environment: dict[str, str]
) -> None:
    table = words_table(key_client, database)
    done = subprocess.run(
        [sys.executable, "-c", LOAD_IN_A_PROCESS, database, table.id, str(deep_file(tmp_path))],
        env=environment,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-500:])
    assert done.stdout.startswith("LoadError: ") and "line 2" in done.stdout


def test_json_nested_to_the_bound_is_read_and_one_level_more_is_a_load_error(
    key_client: Client, database: str, tmp_path: Path
) -> None:
    table = words_table(key_client, database)
    path = tmp_path / "nested.ndjson"
    brackets = '"[[{\\"]]]]\\\\"'  # brackets in strings, escaped quotes and backslashes
    nested = "[" * 99 + "]" * 99  # 100 levels with the line's object
    path.write_text(
        f'{{"n": 1, "word": {brackets}}}\n{{"n": 2, "word": {nested}}}\n{{"n": 3, "word": "c"}}\n'
    )
    report = table.load(path, dry_run=True, progress=False)
    assert report.rejected[["row", "rule"]].values.tolist() == [[1, "type"]]
    path.write_text(f'{{"n": 1, "word": "a"}}\n{{"n": 2, "word": [{nested}]}}\n')
    with pytest.raises(LoadError, match=r"line 2 .*nested deeper than 100 levels"):
        table.load(path, dry_run=True, progress=False)


@pytest.mark.parametrize("kind", ["csv", "ndjson"])
def test_a_value_larger_than_the_read_block_loads(
    key_client: Client, database: str, tmp_path: Path, kind: str
) -> None:
    schema = {"n": "integer", "word": f"string({4 * BLOCK})"}
    table = key_client.create_table(database, new_id("t"), schema=schema)
    big = "x" * (2 * BLOCK + 1000)  # more than two blocks
    frame = pd.DataFrame({"n": [1, 2, 3], "word": ["a", big, "c"]})
    path = tmp_path / f"big.{kind}"
    if kind == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)
    report = table.load(path, id_from="n", progress=False)
    assert (report.written, len(report.rejected)) == (3, 0)
    read = table.to_pandas(progress=False).set_index("n")
    assert read.loc[2, "word"] == big


@pytest.mark.parametrize("kind", ["csv", "ndjson"])
def test_a_row_that_is_no_utf8_is_one_rejected_row_with_its_place_in_the_file(
    key_client: Client, database: str, tmp_path: Path, kind: str
) -> None:
    table = words_table(key_client, database)
    if kind == "csv":
        lines = [b"n,word"] + [f"{i},w{i}".encode() for i in range(10)]
        lines[4] = b"3,caf\xe9"  # Latin-1, row 3 of the source, line 5 of the file
        line = 5
    else:
        lines = [f'{{"n": {i}, "word": "w{i}"}}'.encode() for i in range(10)]
        lines[3] = b'{"n": 3, "word": "caf\xe9"}'
        line = 4
    path = tmp_path / f"latin.{kind}"
    path.write_bytes(b"\n".join(lines) + b"\n")
    report = table.load(path, progress=False)
    assert report.written == 9 == table.count()
    rejected = report.rejected
    assert rejected[["row", "rule"]].values.tolist() == [[3, "read"]]
    assert f"line {line}" in rejected["message"].iloc[0]
    assert "UTF-8" in rejected["message"].iloc[0]


def test_a_type_that_changes_late_in_a_json_file_is_one_rejected_row(
    key_client: Client, database: str, tmp_path: Path
) -> None:
    table = words_table(key_client, database)
    rows = BLOCK // 20  # lines of about 30 bytes: the change is far past the first block
    lines = [f'{{"n": {i}, "word": "w{i}"}}' for i in range(rows)]
    late = rows - 10
    lines[late] = f'{{"n": "n{late}", "word": "w"}}'
    path = tmp_path / "late.ndjson"
    path.write_text("\n".join(lines) + "\n")
    report = table.load(path, dry_run=True, progress=False)
    assert report.written == rows - 1
    assert report.rejected[["row", "column", "rule"]].values.tolist() == [[late, "n", "type"]]


FRAME_LOAD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import pandas as pd
    from frameport import Client

    database, table, rows, seed = sys.argv[1:]
    rng = np.random.default_rng(int(seed))
    frame = pd.DataFrame({"n": rng.integers(0, 10**9, int(rows)), "x": rng.random(int(rows))})
    Client.from_env().table(database, table).load(frame, resume=True, progress=False)
    sys.exit("the load finished before it was stopped")
    """
)


def test_a_resumed_frame_load_does_not_take_the_checkpoint_of_another_frame_of_its_shape(
    key_client: Client,
    database: str,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FRAMEPORT_CACHE_DIR", environment["FRAMEPORT_CACHE_DIR"])
    rows = 20_000
    table = key_client.create_table(database, new_id("t"), schema={"n": "integer", "x": "float"})
    stopped = subprocess.Popen(
        [sys.executable, "-c", FRAME_LOAD, database, table.id, str(rows), "1"], env=environment
    )
    while table.count() < 500 and stopped.poll() is None:
        time.sleep(0.05)  # until the first frame's load has written rows
    stopped.send_signal(signal.SIGKILL)
    assert stopped.wait() == -signal.SIGKILL
    assert 0 < table.count() < rows
    rng = np.random.default_rng(2)
    other = pd.DataFrame({"n": rng.integers(0, 10**9, rows), "x": -rng.random(rows)})
    report = table.load(other, resume=True, progress=False)
    assert report.written == rows
    read = table.to_pandas(progress=False)
    written = read[read["x"] <= 0]  # the first frame's x are positive
    assert sorted(written["n"].astype("int64")) == sorted(other["n"])
