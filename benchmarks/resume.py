"""A resumable export against a plain one, from a service far away.

The service runs in its own process (``frameport serve``, rate limits off) over a table of
sample people loaded once, answering as if it were far away and narrow: ``--latency 150
--bandwidth 20`` (every answer 150 ms later, 20 Mbit/s per connection). Printed, in one run:
the seconds of ``to_parquet(path)`` and of ``to_parquet(path, resume=True)`` (a fresh
export that keeps its checkpoint: segments of ``$sequence``, each a file beside the target,
joined at the end), with the default ``parallel="auto"``, the best of `--repeat` runs of
each, taken in turns; and their ratio. Goal: the resumable export takes at most 1.2x the
plain export's time.

    .venv/bin/python benchmarks/resume.py [--rows 300000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from partitioned import load_people
from read import DATABASE, PROJECT
from support.served import KEY, local_service

FAR = ["--latency", "150", "--bandwidth", "20"]
GOAL = 1.2
"""The resumable export's time against the plain export's, at most."""


def export_seconds(endpoint: str, target: Path, *, resume: bool) -> tuple[float, int]:
    """One export of the whole table to `target`: its seconds and rows."""
    from frameport._client import Client

    with Client(endpoint, PROJECT, key=KEY) as client:
        table = client.table(DATABASE, "people")
        table.head(1).to_pandas(progress=False)  # imports, a connection and the loop are warm
        started = time.perf_counter()
        report = table.to_parquet(target, progress=False, resume=resume)
        seconds = time.perf_counter() - started
    assert report.ok, report.summary()
    return seconds, report.rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "service"
        print(f"loading {args.rows:,} rows ...", flush=True)
        with local_service(data) as endpoint:
            load_people(endpoint, args.rows)
        best = {"plain": float("inf"), "resumable": float("inf")}
        with local_service(data, FAR) as endpoint:
            for run in range(args.repeat):
                for name in best:
                    target = Path(scratch) / f"{name}-{run}.parquet"
                    seconds, rows = export_seconds(endpoint, target, resume=name == "resumable")
                    assert rows == args.rows, rows
                    best[name] = min(best[name], seconds)
                    print(f"  {name:10} run {run + 1}: {seconds:6.2f} s", flush=True)
    ratio = best["resumable"] / best["plain"]
    print(f"\nexport of {args.rows:,} rows, {' '.join(FAR)} (best of {args.repeat}):")
    print(f"  plain      {best['plain']:6.2f} s")
    print(f"  resumable  {best['resumable']:6.2f} s")
    verdict = "met" if ratio <= GOAL else "MISSED"
    print(f"  resumable / plain  {ratio:5.2f}x  (goal <= {GOAL})  {verdict}")


if __name__ == "__main__":
    main()
