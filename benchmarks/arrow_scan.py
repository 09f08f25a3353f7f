"""Lazy polars scans against reading everything, and the Arrow stream against `to_arrow()`.

A local service holds 200,000 sample people. Printed, in one run:

* a lazy scan with a predicate keeping about 1 % of the rows and two columns, against
  ``to_polars()`` then the same filter in polars: the share of rows the service sent for the
  scan (goal ≤ 2 %), and the speed ratio (goal ≥ 10×); also how long the service takes to
  scan its table for that unindexed column (a ``count()`` with the filter);
* ``pa.table(q)`` through ``__arrow_c_stream__`` against ``q.to_arrow()`` on the whole table:
  the speed ratio (goal ≥ 0.9×) and the peak RSS growth of each while it reads (the
  kernel's high-water mark, ``read.peak_growth``), the median of `--repeat` fresh subprocesses
  (goal: the stream's no higher).

The service runs in this process on a shared machine; each timing is the best of `--repeat`.

    .venv/bin/python benchmarks/arrow_scan.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from frameport.local import LocalService

ROWS = 200_000
DATABASE = "bench"
TABLE = "people"

_MEMORY_CHILD = """
import json, sys
import pyarrow as pa
import frameport as fp

sys.path.insert(0, sys.argv[2])
from read import peak_growth

how = sys.argv[1]
client = fp.Client.from_env()
people = client.table("bench", "people")
people.schema()  # warm up: the connection and the imports
read = (lambda: pa.table(people)) if how == "stream" else lambda: people.to_arrow(progress=False)
table, _, growth = peak_growth(read)
print(json.dumps({"rows": table.num_rows, "growth": growth}))
"""


def best_time(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def peak_growth(service: LocalService, how: str) -> int:
    """Peak RSS growth of reading the table in a fresh process (credentials in its env)."""
    env = {
        **os.environ,
        "FRAMEPORT_ENDPOINT": service.endpoint,
        "FRAMEPORT_PROJECT": service.project,
        "FRAMEPORT_KEY": service.key,
    }
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, how, str(Path(__file__).parent)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["rows"] == ROWS
    return int(result["growth"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ["FRAMEPORT_PROGRESS"] = "0"  # no bars between the figures (to_polars, streams)

    import polars as pl
    import pyarrow as pa

    import frameport as fp
    from frameport._demo import sample_people
    from frameport.local import LocalService

    with LocalService() as service, service.client() as client:
        started = time.perf_counter()
        people = client.create_table(DATABASE, TABLE, schema=sample_people(1))
        people.insert(sample_people(ROWS, seed=2), progress=False)
        print(f"loaded {ROWS:,} rows in {time.perf_counter() - started:.1f} s")

        predicate = pl.col("age") == 42
        lazy = fp.scan_table(client, DATABASE, TABLE).filter(predicate).select("name", "city")

        before = service.rows_served
        result = lazy.collect()
        sent = service.rows_served - before
        eager = people.to_polars()
        assert isinstance(eager, pl.DataFrame)
        assert result.equals(eager.filter(predicate).select("name", "city"))

        def read_then_filter() -> object:
            frame = people.to_polars()
            assert isinstance(frame, pl.DataFrame)
            return frame.filter(predicate).select("name", "city")

        scan_s = best_time(lazy.collect, args.repeat)
        full_s = best_time(read_then_filter, args.repeat)
        count_s = best_time(lambda: people.where(fp.col("age") == 42).count(), args.repeat)
        share = sent / ROWS
        print(f"lazy scan keeping {result.height:,} rows ({result.height / ROWS:.2%}), 2 columns:")
        print(f"  rows the service sent: {sent:,} = {share:.2%} of the table (goal <= 2 %)")
        print(f"  scan {scan_s:.3f} s, to_polars() then filter {full_s:.3f} s: "
              f"{full_s / scan_s:.1f}x faster (goal >= 10x)")  # fmt: skip
        print(f"  the service's scan of its table for the unindexed column (count with the "
              f"filter): {count_s:.3f} s")  # fmt: skip

        stream_s = best_time(lambda: pa.table(people), args.repeat)
        arrow_s = best_time(lambda: people.to_arrow(progress=False), args.repeat)
        assert pa.table(people).equals(people.to_arrow(progress=False))
        print(f"pa.table(q) through the stream against q.to_arrow(), {ROWS:,} rows:")
        print(f"  stream {stream_s:.3f} s, to_arrow {arrow_s:.3f} s: "
              f"{arrow_s / stream_s:.2f}x the speed (goal >= 0.9x)")  # fmt: skip
        growth: dict[str, list[float]] = {"stream": [], "to_arrow": []}
        for _ in range(args.repeat):  # interleaved, so both see the same machine
            for how, runs in growth.items():
                runs.append(peak_growth(service, how) / 2**20)
        stream_mb, arrow_mb = (statistics.median(runs) for runs in growth.values())
        ratio = stream_mb / arrow_mb
        print(f"  peak RSS growth (median of {args.repeat}): stream {stream_mb:.0f} MB, "
              f"to_arrow {arrow_mb:.0f} MB: {ratio:.2f}x (goal <= 1.0x)")  # fmt: skip


if __name__ == "__main__":
    main()
