"""Pipelines, measured: a first Delta `sync` against `to_parquet` of the same table, later
syncs after a few changes, the Delta merge's floor, and a resumed export.

Printed, in one run, against the local service in its own process (``frameport serve``,
rate limits off; 500,000 sample people by default):

1. time and peak RSS growth of a first ``sync`` against ``to_parquet`` (fresh subprocess each);
2. after updating 1 % of the rows and inserting 0.2 %: a sync with ``deletes="ignore"`` —
   the bytes of row data the service sent (goal ≤ 2 % of the first sync's) and its time
   (goal ≤ 35 % of the first's); after deleting 0.1 %: a sync with ``deletes="scan"`` (goal
   ≤ 50 % of the first's time);
3. the local floor: a Delta merge of the same number of changed rows alone, with the rows
   spread over the table or taken from its newest ``$sequence`` range, for the table in one
   file and laid out in files of `FILE_ROWS` rows by ``$sequence``;
4. a resumable export killed at 50 % and resumed, against an uninterrupted one (goal ≤ 60 %).

Row bytes are counted in the client: the length of every ``…/rows`` response body the service
sent (uncompressed JSON), patched into the connection's `request` for the measurement.

    .venv/bin/python benchmarks/sync.py [--rows 500000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from read import DATABASE, PROJECT, peak_growth
from support.served import KEY, local_service

FILE_ROWS = 50_000


def count_row_bytes() -> list[int]:
    """Patch the connection so that the bytes of every rows page are added to the result."""
    from frameport._core._connection import Connection

    counted = [0]
    original = Connection.request

    async def request(self: Any, method: str, path: str, **options: Any) -> Any:
        response = await original(self, method, path, **options)
        if method == "GET" and path.endswith("/rows"):
            counted[0] += len(response.content)
        return response

    Connection.request = request  # type: ignore[method-assign]
    return counted


def measure(kind: str, endpoint: str, target: str, deletes: str) -> dict[str, Any]:
    """Run one export or sync here; its seconds, peak RSS growth and row bytes fetched."""
    from frameport._client import Client

    counted = count_row_bytes()
    with Client(endpoint, PROJECT, key=KEY) as client:
        table = client.table(DATABASE, "people")
        table.head(1).to_pandas(progress=False)  # imports, connections and the loop are warm
        counted[0] = 0

        def run() -> object:
            if kind == "parquet":
                return table.to_parquet(target, progress=False)
            if kind == "resume":
                return table.to_parquet(target, progress=False, resume=True)
            return table.sync(target, deletes=deletes)  # type: ignore[arg-type]

        _, seconds, rss = peak_growth(run)
    return {"seconds": seconds, "rss": rss, "bytes": counted[0]}


def run_measure(kind: str, endpoint: str, target: Path, deletes: str = "scan") -> dict[str, Any]:
    output = subprocess.run(
        [sys.executable, __file__, "measure", kind, endpoint, str(target), deletes],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return dict(json.loads(output.strip().splitlines()[-1]))


def change_rows(endpoint: str, rows: int) -> tuple[int, int]:
    """Update 1 % of the rows and insert 0.2 % more; (updated, inserted)."""
    import pandas as pd

    from frameport._client import Client
    from frameport._demo import sample_people

    with Client(endpoint, PROJECT, key=KEY) as client:
        table = client.table(DATABASE, "people")
        ids = table.select("name").to_pandas(progress=False)["$id"].tolist()
        chosen = random.Random(7).sample(ids, rows // 100)
        names = [f"renamed {n}" for n in range(len(chosen))]
        table.upsert(pd.DataFrame({"$id": chosen, "name": names}), progress=False)
        table.insert(sample_people(rows // 500, seed=8), progress=False)
    return len(chosen), rows // 500


def delete_rows(endpoint: str, rows: int) -> int:
    """Delete 0.1 % of the rows; how many."""
    from frameport._client import Client

    with Client(endpoint, PROJECT, key=KEY) as client:
        table = client.table(DATABASE, "people")
        ids = table.select("name").to_pandas(progress=False)["$id"].tolist()
        chosen = random.Random(9).sample(ids, rows // 1000)
        for row_id in chosen:
            client._request("DELETE", f"{table.location.rows_path}/{row_id}")
    return len(chosen)


def merge_floor(synced: Path, changed: int, scratch: Path) -> dict[str, float]:
    """Seconds of a Delta merge of `changed` rows alone: spread or newest, one file or many."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    whole = DeltaTable(str(synced)).to_pyarrow_table().sort_by("$sequence")
    figures = {}
    for layout, file_rows in (("one file", None), (f"files of {FILE_ROWS:,} rows", FILE_ROWS)):
        base = scratch / f"layout-{file_rows}"
        size = None if file_rows is None else _file_bytes(whole, file_rows)
        write_deltalake(str(base), whole, mode="overwrite", target_file_size=size)
        files = len(DeltaTable(str(base)).file_uris())
        picks = {
            "spread": pa.array(sorted(random.Random(3).sample(range(whole.num_rows), changed))),
            "newest": pa.array(range(whole.num_rows - changed, whole.num_rows)),
        }
        for where, indices in picks.items():
            copy = scratch / "copy"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(base, copy)
            rows = whole.take(indices)
            renamed = pa.array([f"{name}!" for name in rows.column("name").to_pylist()])
            rows = rows.set_column(rows.schema.get_field_index("name"), "name", renamed)
            started = time.perf_counter()
            (DeltaTable(str(copy)).merge(rows, "t.`$id` = s.`$id`", "s", "t")
             .when_matched_update_all().when_not_matched_insert_all().execute())  # fmt: skip
            figures[f"{layout} ({files} files), {where} rows"] = time.perf_counter() - started
    return figures


def _file_bytes(table: Any, rows: int) -> int:
    return max(1, int(table.nbytes * rows / table.num_rows) // 4)  # Parquet is smaller


def resumed_export(endpoint: str, scratch: Path) -> tuple[float, float]:
    """(seconds of a resumable export, seconds of the same export resumed at 50 %)."""
    whole = run_measure("resume", endpoint, scratch / "whole.parquet")["seconds"]
    target = scratch / "resumed.parquet"
    checkpoint = target.with_name(f".{target.name}.resume") / "checkpoint.json"
    process = subprocess.Popen(
        [sys.executable, __file__, "measure", "resume", endpoint, str(target), "scan"],
        stdout=subprocess.DEVNULL,
    )
    while True:
        time.sleep(0.02)
        try:
            state = json.loads(checkpoint.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            continue
        if state["done"] * 2 >= len(state["segments"]):
            break
    process.send_signal(signal.SIGKILL)
    process.wait()
    return whole, run_measure("resume", endpoint, target)["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    args = parser.parse_args()
    os.environ["FRAMEPORT_PROGRESS"] = "0"
    rows = args.rows
    print(f"cores: {os.cpu_count()} (a shared machine: compare the ratios, not the seconds)")
    with tempfile.TemporaryDirectory(prefix="frameport-bench-") as temporary:
        scratch = Path(temporary)
        with local_service(scratch / "service") as endpoint:
            from partitioned import load_people

            print(f"loading {rows:,} rows into the local service ...", flush=True)
            load_people(endpoint, rows)
            parquet = run_measure("parquet", endpoint, scratch / "people.parquet")
            target = scratch / "people_delta"
            time.sleep(5)  # the load lies before the first sync's watermark less the lag
            first = run_measure("sync", endpoint, target)
            updated, inserted = change_rows(endpoint, rows)
            second = run_measure("sync", endpoint, target, "ignore")
            deleted = delete_rows(endpoint, rows)
            third = run_measure("sync", endpoint, target, "scan")
            whole, resumed = resumed_export(endpoint, scratch)
        floor = merge_floor(target, updated + inserted, scratch)
    mib = 1024 * 1024
    print(f"\n1. first sync against to_parquet, {rows:,} rows (fresh subprocess each)")
    print(f"   to_parquet: {parquet['seconds']:.1f} s, peak RSS +{parquet['rss'] / mib:.0f} MiB")
    print(f"   first sync: {first['seconds']:.1f} s, peak RSS +{first['rss'] / mib:.0f} MiB "
          f"(time ×{first['seconds'] / parquet['seconds']:.2f}, "
          f"RSS ×{first['rss'] / max(parquet['rss'], 1):.2f})")  # fmt: skip
    print(f"\n2. later syncs ({updated:,} rows updated and {inserted:,} inserted; "
          f"then {deleted:,} deleted)")  # fmt: skip
    ratio_bytes = second["bytes"] / first["bytes"]
    ratio_time = second["seconds"] / first["seconds"]
    print(f"   deletes=ignore: {second['bytes'] / mib:.1f} MiB of rows against "
          f"{first['bytes'] / mib:.1f} MiB: {ratio_bytes:.2%} (goal ≤ 2 %); "
          f"{second['seconds']:.1f} s: {ratio_time:.0%} of the first (goal ≤ 35 %)")  # fmt: skip
    print(f"   deletes=scan:   {third['seconds']:.1f} s: "
          f"{third['seconds'] / first['seconds']:.0%} of the first (goal ≤ 50 %); "
          f"{third['bytes'] / mib:.1f} MiB of rows (the IDs of the view)")  # fmt: skip
    print(f"\n3. the local floor: a Delta merge of {updated + inserted:,} rows alone")
    for name, seconds in floor.items():
        print(f"   {name}: {seconds:.2f} s")
    print("\n4. resumable export")
    print(f"   uninterrupted: {whole:.1f} s; resumed after a kill at 50 %: {resumed:.1f} s "
          f"= {resumed / whole:.0%} (goal ≤ 60 %)")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "measure":
        print(json.dumps(measure(*sys.argv[2:6])))
    else:
        main()
