"""Whole projects, measured: a full backup against exporting each table to Parquet and
downloading each file, an incremental backup after a few changes, a restore against the
bulk insert path, and the peak RSS of each.

Printed, in one run, against local services in their own processes (``frameport serve``,
rate limits off), on the goal's project: 3 tables of 1,000,000 rows in all and 200 MiB of
files (``--rows``, ``--mib``). Each measurement runs in a fresh process:

1. a full backup against the baseline, each table's ``to_parquet`` plus each file's
   ``download`` to disk (goal ≤ 1.1×), taken in turn for ``--rounds`` rounds;
2. after updating 1 % of the rows and adding 2 files: an incremental backup (goal ≤ 5 % of
   the full backup's time), ``--rounds`` times, each into a copy of the last full backup;
3. a restore of rows into an empty service against ``Table.insert`` of the same rows into
   another (goal ≥ 0.9× its rows per second), taken in turn for ``--restore-rounds`` rounds
   (5: a run's rate swings by a tenth either way, more than the gap it is read on). Both
   write at the service's insert rate, which does not depend on the project's size, so they
   write a snapshot of a database of the same 3 tables with ``--restore-rows`` rows in all
   (200,000: 20 s a run, where the goal's million would take 100; at 60,000 the restore's
   fixed part, its tables, columns and indexes made first, weighed a tenth more);
4. the peak RSS of the backups and the restore (goal ≤ 200 MB), and of the baselines beside
   them.

Every measurement's process starts as the ``frameport`` command's does, with its allocators
(``frameport._core._memory.choose_allocators``: Arrow's system pool, two malloc arenas, large
blocks mapped on their own), so the baselines and frameport's jobs run alike. (In a process
left on Arrow's default allocator the full backup peaks 50–80 MB higher, in the same time.)

Each time is the fastest of its rounds (this machine's speed swings by a third from run to
run), each memory figure the highest. The defaults take about twelve minutes;
``--rows 60000 --mib 24 --restore-rows 60000 --restore-rounds 3`` two.

    .venv/bin/python benchmarks/backup.py [--rows 1000000] [--mib 200] [--restore-rows 200000]
        [--rounds 3] [--restore-rounds 5] [--no-restore]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from support.memory import PeakRss
from support.served import KEY, PROJECT, local_service

DATABASE = "backup_bench"
RESTORE_DATABASE = "restore_bench"
BUCKET = "backup_bench"
SHARES = {"people": 0.5, "visits": 0.3, "notes": 0.2}
FILES = 12
GOAL_RSS_MB = 200


def load(endpoint: str, rows: int, mib: int, restore_rows: int) -> None:
    from frameport._client import Client
    from frameport._demo import sample_people

    with Client(endpoint, PROJECT, key=KEY) as client:
        for database, total in ((DATABASE, rows), (RESTORE_DATABASE, restore_rows)):
            for seed, (table, share) in enumerate(SHARES.items() if total else ()):
                frame = sample_people(int(total * share), seed=seed)
                client.create_table(database, table, schema=frame).insert(frame, progress=False)
        bucket = client.create_bucket(BUCKET, "files", exist_ok=True)
        size = mib * 1024 * 1024 // FILES
        for number in range(FILES):
            bucket.upload_bytes(random.Random(number).randbytes(size), f"f{number}.bin",
                                file_id=f"f{number}", progress=False)  # fmt: skip


def change(endpoint: str) -> None:
    """Update 1 % of each table's rows and add 2 files."""
    import pandas as pd

    from frameport._client import Client

    with Client(endpoint, PROJECT, key=KEY) as client:
        for table_id in SHARES:
            table = client.table(DATABASE, table_id)
            ids = table.select("name").to_pandas(progress=False)["$id"].tolist()
            chosen = random.Random(7).sample(ids, max(1, len(ids) // 100))
            names = [f"renamed {n}" for n in range(len(chosen))]
            table.upsert(pd.DataFrame({"$id": chosen, "name": names}), progress=False)
        bucket = client.bucket(BUCKET)
        for number in range(2):
            bucket.upload_bytes(b"new file %d" % number, f"new{number}.txt", progress=False)


def measure(kind: str, endpoint: str, target: str) -> dict[str, Any]:
    """One measurement in this process: its seconds and peak RSS (absolute and growth)."""
    import pyarrow.parquet as pq

    from frameport._client import Client

    with Client(endpoint, PROJECT, key=KEY) as client:
        client.databases()  # imports, connections and the loop are warm
        out = Path(target)

        def run() -> Any:
            if kind == "baseline":
                out.mkdir(parents=True, exist_ok=True)
                for table_id in SHARES:
                    client.table(DATABASE, table_id).to_parquet(out / f"{table_id}.parquet",
                                                                system=True,
                                                                progress=False)  # fmt: skip
                bucket = client.bucket(BUCKET)
                for file_id in bucket.list_files()["$id"]:
                    bucket.download(file_id, out / file_id, progress=False)
                return None
            if kind == "backup":
                return client.backup(out, databases=[DATABASE], buckets=[BUCKET], functions=[],
                                     progress=False)  # fmt: skip
            if kind == "rows-backup":
                return client.backup(out, databases=[RESTORE_DATABASE], buckets=[],
                                     functions=[], progress=False)  # fmt: skip
            if kind == "restore":
                return client.restore(out, progress=False)
            if kind == "insert":
                rows = 0
                for file in sorted(out.glob("snapshots/*/tables/*/*/rows.parquet")):
                    frame = pq.read_table(file).to_pandas()
                    table = file.parent.name
                    schema = frame.drop(columns=[c for c in frame.columns if c.startswith("$")])
                    client.create_table(RESTORE_DATABASE, table, schema=schema).insert(
                        frame.drop(columns=["$sequence", "$createdAt", "$updatedAt"]),
                        progress=False,
                    )
                    rows += len(frame)
                return rows
            raise ValueError(kind)

        started = time.perf_counter()
        with PeakRss() as rss:
            result = run()
        seconds = time.perf_counter() - started
        growth, peak = float(rss.peak - rss.start), rss.peak
    rows = result.written if kind == "restore" else result if kind == "insert" else None
    return {"seconds": seconds, "growth": growth, "rss": max(peak, growth), "rows": rows}


def run_measure(kind: str, endpoint: str, target: Path) -> dict[str, Any]:
    # What the steps before wrote (the project, an archive) goes to disk first, not during it.
    os.sync()
    output = subprocess.run(
        [sys.executable, __file__, "measure", kind, endpoint, str(target)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return dict(json.loads(output.strip().splitlines()[-1]))


def fastest(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest of `runs`, with the highest memory any of them reached."""
    best = dict(min(runs, key=lambda run: run["seconds"]))
    best["growth"] = max(run["growth"] for run in runs)
    best["rss"] = max(run["rss"] for run in runs)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--mib", type=int, default=200)
    parser.add_argument(
        "--restore-rows",
        type=int,
        default=200_000,
        help="rows of the database the restore and the insert write",
    )
    parser.add_argument("--no-restore", action="store_true", help="measure the backups only")
    parser.add_argument(
        "--rounds", type=int, default=3,
        help="runs of the backups (the baseline and the full backup in turn, then the "
             "incremental); the fastest of each counts",
    )  # fmt: skip
    parser.add_argument(
        "--restore-rounds", type=int, default=5,
        help="runs of the restore and the insert in turn; the fastest of each counts",
    )  # fmt: skip
    args = parser.parse_args()
    mb = 1024 * 1024
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="frameport-bench-") as scratch:
        work = Path(scratch)
        with local_service(work / "source") as source:
            load(source, args.rows, args.mib, 0 if args.no_restore else args.restore_rows)
            # An incremental backup reads again the writes of the `lag` (5 s) before the last
            # backup began; the project is loaded well before, as a project in use would be.
            time.sleep(6)
            # Baseline and full backup in turn, each into a fresh folder; then, after the
            # change, each incremental into its own copy of the last full backup's archive.
            rounds: dict[str, list[dict[str, Any]]] = {"baseline": [], "backup": []}
            for round_number in range(args.rounds):
                for kind, kind_runs in rounds.items():
                    kind_runs.append(run_measure(kind, source, work / f"{kind}-{round_number}"))
            change(source)
            full_archive = work / f"backup-{args.rounds - 1}"
            incremental_runs = []
            for round_number in range(args.rounds):
                copy = work / f"incremental-{round_number}"
                shutil.copytree(full_archive, copy, copy_function=os.link)  # written once each
                incremental_runs.append(run_measure("backup", source, copy))
            rounds["incremental"] = incremental_runs
            results.update({kind: fastest(kind_runs) for kind, kind_runs in rounds.items()})
            if not args.no_restore:
                run_measure("rows-backup", source, work / "rows")
        if not args.no_restore:
            # Interleaved rounds, each into an empty service: this machine's speed drifts
            # over the minutes the writes take, and drifts alike for both in a round.
            runs: dict[str, list[dict[str, Any]]] = {"restore": [], "insert": []}
            for round_number in range(args.restore_rounds):
                for kind, kind_runs in runs.items():
                    with local_service(work / f"{kind}-{round_number}") as destination:
                        kind_runs.append(run_measure(kind, destination, work / "rows"))
            results.update({kind: fastest(kind_runs) for kind, kind_runs in runs.items()})
            # The restore's rate over the insert's within each round, where both met the same
            # drift (the goal is read on the fastest of each, as the other goals are).
            paired = [
                (restore["rows"] / restore["seconds"]) / (insert["rows"] / insert["seconds"])
                for restore, insert in zip(runs["restore"], runs["insert"], strict=True)
            ]
    full = results["backup"]["seconds"]
    ratio = full / results["baseline"]["seconds"]
    incremental = results["incremental"]["seconds"] / full
    jobs = [kind for kind in ("backup", "incremental", "restore") if kind in results]
    peak = max(results[kind]["rss"] for kind in jobs) / mb
    print(f"project: 3 tables, {args.rows:,} rows; {FILES} files, {args.mib} MiB")
    print(f"full backup {full:.1f} s vs export + downloads {results['baseline']['seconds']:.1f} s:"
          f" {ratio:.2f}x (goal <= 1.1x)")  # fmt: skip
    print(f"incremental backup after 1 % of rows and 2 files changed: "
          f"{results['incremental']['seconds']:.2f} s = {incremental:.1%} of the full backup "
          f"(goal <= 5 %)")  # fmt: skip
    if not args.no_restore:
        restore_rate = results["restore"]["rows"] / results["restore"]["seconds"]
        insert_rate = results["insert"]["rows"] / results["insert"]["seconds"]
        print(
            f"restore of {args.restore_rows:,} rows {restore_rate:,.0f} rows/s vs insert "
            f"{insert_rate:,.0f} rows/s: {restore_rate / insert_rate:.2f}x (goal >= 0.9x); "
            f"round by round {', '.join(f'{r:.2f}x' for r in paired)}"
        )
    for name, result in results.items():
        print(f"  {name}: {result['seconds']:.2f} s, peak RSS {result['rss'] / mb:.0f} MB "
              f"(growth {result['growth'] / mb:.0f} MB)")  # fmt: skip
    print(f"peak RSS of the {', '.join(jobs)} {peak:.0f} MB (goal <= {GOAL_RSS_MB} MB)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "measure":
        from frameport._core._memory import choose_allocators

        choose_allocators()  # before pyarrow loads, as the command's process does
        os.environ.setdefault("TQDM_DISABLE", "1")
        print(json.dumps(measure(sys.argv[2], sys.argv[3], sys.argv[4])))
        sys.exit(0)
    sys.exit(main())
