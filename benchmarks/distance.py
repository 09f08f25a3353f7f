"""Near and far: reads and uploads against the local service on this machine and as if it
were 50 ms away, frameport's defaults beside fixed settings and a reference client.

The service runs in its own process (``frameport serve``, rate limits off), started once per
distance over the same data: near (no delay), far (``--latency 50``: every answer 50 ms
later) and far and narrow (``--latency 50 --bandwidth 100``: also 100 Mbit/s per
connection). Printed, in one run:

1. Reads of a 200,000-row table (sample people, pages of 5000 rows, every ``$`` field shown:
   ``system=True``): rows/s of ``to_pandas`` serial (``parallel=1``), with ``parallel`` = 2,
   4, 8, 16 and with ``parallel="auto"`` (the default), each in a fresh subprocess that also
   measures the peak RSS growth against the final frame's size. Goals: far, with or without
   the bandwidth cap, auto >= 0.9x the near auto read's rows/s; near and far, auto >= 0.95x
   the best fixed N and near >= 0.95x serial; peak memory <= 2x the frame in every cell.
2. Uploads of a 200 MiB file, near and far: ``upload_file`` with its defaults against the
   reference pattern (httpx, the first part alone, then 8 parts at a time, no retries), and
   near against the raw floor (the multipart bodies built beforehand, POSTed the same way).
   Goals: far, frameport >= 1.0x the reference's throughput; near, <= 1.1x the floor's time.

The machine's cores are shared by the service and the client (and whatever else runs):
compare the ratios, which are measured side by side, more than the absolute figures.

    .venv/bin/python benchmarks/distance.py [--rows 200000] [--file-mb 200] [--repeat 2]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from read import DATABASE, PROJECT, best_seconds, peak_growth
from support.served import KEY, local_service
from upload import MB, post_raw_chunks, prebuilt_chunk_bodies, write_random_file

DISTANCES: dict[str, list[str]] = {
    "near": [],
    "far (50 ms)": ["--latency", "50"],
    "far (50 ms, 100 Mbit/s)": ["--latency", "50", "--bandwidth", "100"],
}
FIXED = (2, 4, 8, 16)
SETTINGS: dict[str, str] = {"serial": "1", **{f"parallel={n}": str(n) for n in FIXED}}
SETTINGS["auto"] = "auto"
REFERENCE_PARTS = 8
BUCKET = "distance"


# ---------------------------------------------------------------------------------------------
# Reads


def served_at_each_distance(
    rows: int, distances: dict[str, list[str]] = DISTANCES
) -> Iterator[tuple[str, str]]:
    """A table of `rows` sample people loaded once into a local service, then served at
    each of `distances` (name: ``serve`` options) in turn: each one's name and endpoint,
    while it runs."""
    with tempfile.TemporaryDirectory(prefix="frameport-bench-") as scratch:
        data = Path(scratch) / "data"
        with local_service(data) as endpoint:
            load_table(endpoint, rows)
        for distance, extra in distances.items():
            with local_service(data, extra) as endpoint:
                yield distance, endpoint


def load_table(endpoint: str, rows: int) -> None:
    from frameport._client import Client
    from frameport._demo import sample_people

    with Client(endpoint, PROJECT, key=KEY) as client:
        frame = sample_people(rows)
        client.create_table(DATABASE, "people", schema=frame).insert(frame, progress=False)
        client.create_bucket(BUCKET, BUCKET)


def read_cell(endpoint: str, setting: str, page_size: int | None = None) -> dict[str, float]:
    """One ``to_pandas`` of the table (run in a subprocess of its own), with `page_size`
    rows a page (None: frameport's default)."""
    from frameport._client import Client

    parallel: int | str = setting if setting == "auto" else int(setting)
    with Client(endpoint, PROJECT, key=KEY) as client:
        table = client.table(DATABASE, "people")
        table.head(1).to_pandas(progress=False)  # imports, a connection and the loop are warm
        # every $ field, as the service sends them: the frame the goals were set against
        read = functools.partial(table.to_pandas, progress=False, system=True, page_size=page_size)
        frame, seconds, growth = peak_growth(lambda: read(parallel=parallel))  # type: ignore[arg-type]
    return {
        "rows": float(len(frame)),
        "seconds": seconds,
        "peak_growth": growth,
        "frame_bytes": float(frame.memory_usage(deep=True).sum()),
    }


def measure_read(
    endpoint: str, setting: str, repeat: int, page_size: int | None = None
) -> dict[str, float]:
    """The fastest of `repeat` reads (`read_cell`), each in a fresh subprocess; its memory is
    the largest seen."""
    runs: list[dict[str, float]] = []
    pages = [] if page_size is None else [str(page_size)]
    for _ in range(repeat):
        output = subprocess.run(
            [sys.executable, __file__, "read", endpoint, setting, *pages],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        runs.append(json.loads(output.strip().splitlines()[-1]))
    best = min(runs, key=lambda run: run["seconds"])
    best["memory_ratio"] = max(run["peak_growth"] / run["frame_bytes"] for run in runs)
    best["rate"] = best["rows"] / best["seconds"]
    return best


def read_matrix(endpoints: dict[str, str], repeat: int) -> dict[str, dict[str, dict[str, float]]]:
    matrix: dict[str, dict[str, dict[str, float]]] = {}
    for distance, endpoint in endpoints.items():
        matrix[distance] = {}
        for name, setting in SETTINGS.items():
            cell = measure_read(endpoint, setting, repeat)
            matrix[distance][name] = cell
            print(
                f"  {distance:24} {name:12} {cell['rate']:10,.0f} rows/s  "
                f"{cell['seconds']:6.2f} s  peak {cell['memory_ratio']:4.2f}x frame",
                flush=True,
            )
    return matrix


def judge(label: str, value: float, goal: float, *, at_least: bool = True, unit: str = "x") -> bool:
    met = value >= goal if at_least else value <= goal
    sign = ">=" if at_least else "<="
    print(f"  {label:52} {value:6.2f}{unit}  (goal {sign} {goal})  {'met' if met else 'MISSED'}")
    return met


def judge_reads(matrix: dict[str, dict[str, dict[str, float]]]) -> bool:
    def rate(distance: str, name: str) -> float:
        return matrix[distance][name]["rate"]

    def best_fixed(distance: str) -> float:
        return max(rate(distance, f"parallel={n}") for n in FIXED)

    near_auto = rate("near", "auto")
    met = [judge("near: auto / serial", near_auto / rate("near", "serial"), 0.95)]
    for distance in DISTANCES:
        if distance != "near":
            met.append(
                judge(f"{distance}: auto / near auto", rate(distance, "auto") / near_auto, 0.9)
            )
    for distance in DISTANCES:
        met.append(
            judge(
                f"{distance}: auto / best fixed N",
                rate(distance, "auto") / best_fixed(distance),
                0.95,
            )
        )
    worst = max(cell["memory_ratio"] for cells in matrix.values() for cell in cells.values())
    met.append(judge("peak memory / frame, worst cell", worst, 2.0, at_least=False))
    return all(met)


# ---------------------------------------------------------------------------------------------
# Uploads


async def reference_upload(endpoint: str, path: Path) -> None:
    """The reference client's pattern: parts read from the file, the first POSTed alone,
    then `REFERENCE_PARTS` at a time; no retries."""
    from frameport import ID
    from frameport._transfer._upload import plan_parts

    headers = {"X-Service-Project": PROJECT, "X-Service-Key": KEY}
    size, file_id = path.stat().st_size, ID.unique()
    slots = asyncio.Semaphore(REFERENCE_PARTS)
    async with httpx.AsyncClient(base_url=endpoint, headers=headers, timeout=600) as http:

        async def post(index: int) -> None:
            part = plan_parts(size)[index]
            async with slots:
                with path.open("rb") as source:
                    source.seek(part.start)
                    data = source.read(part.size)
                response = await http.post(
                    f"/storage/buckets/{BUCKET}/files",
                    data={"fileId": file_id},
                    files={"file": (path.name, data)},
                    headers={"Content-Range": part.content_range(size), "X-Service-ID": file_id},
                )
                response.raise_for_status()

        await post(0)
        await asyncio.gather(*(post(index) for index in range(1, len(plan_parts(size)))))


def interleaved_best(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """The seconds of the fastest of `repeat` runs of each, taken in turns: every upload adds
    to what the service's disk must write back, so each side sees the same machine."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, run in runs.items():
            best[name] = min(best[name], best_seconds(run, 1))
    return best


def upload_figures(endpoint: str, path: Path, repeat: int, *, floor: bool) -> dict[str, float]:
    from frameport import ID
    from frameport._client import Client

    figures: dict[str, float] = {}
    with Client(endpoint, PROJECT, key=KEY) as client:
        bucket = client.bucket(BUCKET)
        figures.update(
            interleaved_best(
                {
                    "frameport": lambda: bucket.upload_file(path),
                    "reference": lambda: asyncio.run(reference_upload(endpoint, path)),
                },
                repeat,
            )
        )
        if floor:
            data = path.read_bytes()
            bodies = prebuilt_chunk_bodies(data, ID.unique())
            figures["floor"] = best_seconds(
                lambda: asyncio.run(
                    post_raw_chunks(
                        endpoint, bodies, concurrency=REFERENCE_PARTS, key=KEY, bucket=BUCKET
                    )
                ),
                1,
            )
            # The client's own work the floor leaves out: the MD5 the file is checked with.
            figures["md5 alone"] = best_seconds(lambda: hashlib.md5(data).digest(), 1)
    return figures


def judge_uploads(near: dict[str, float], far: dict[str, float], size: int) -> bool:
    for distance, figures in (("near", near), ("far (50 ms)", far)):
        for name, seconds in figures.items():
            print(f"  {distance:12} {name:10} {seconds:6.2f} s  {size / MB / seconds:6.0f} MiB/s")
    return all(
        [
            judge(
                "far: frameport / reference throughput", far["reference"] / far["frameport"], 1.0
            ),
            judge(
                "near: frameport time / raw floor time",
                near["frameport"] / near["floor"],
                1.1,
                at_least=False,
            ),
        ]
    )


# ---------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--file-mb", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=2, help="best of N (default 2)")
    args = parser.parse_args()
    os.environ["FRAMEPORT_PROGRESS"] = "0"
    with tempfile.TemporaryDirectory(prefix="frameport-distance-") as scratch:
        data = Path(scratch) / "service"
        os.environ["FRAMEPORT_CACHE_DIR"] = str(Path(scratch) / "cache")
        print(f"loading {args.rows:,} rows into the local service ...", flush=True)
        with local_service(data) as endpoint:
            load_table(endpoint, args.rows)
        source = write_random_file(Path(scratch) / "file.bin", args.file_mb * MB)
        matrix: dict[str, dict[str, dict[str, float]]] = {}
        uploads: dict[str, dict[str, float]] = {}
        print(f"\nreads of {args.rows:,} rows with to_pandas (best of {args.repeat}):")
        for distance, options in DISTANCES.items():
            with local_service(data, options) as endpoint:
                matrix.update(read_matrix({distance: endpoint}, args.repeat))
                if distance != "far (50 ms, 100 Mbit/s)":
                    uploads[distance] = upload_figures(
                        endpoint, source, args.repeat, floor=distance == "near"
                    )
        print("\nread goals:")
        reads_met = judge_reads(matrix)
        print(f"\nuploads of {args.file_mb} MiB (best of {args.repeat}):")
        uploads_met = judge_uploads(uploads["near"], uploads["far (50 ms)"], args.file_mb * MB)
    print("\nthe machine's cores are shared: the ratios above were measured side by side")
    print("all goals met" if reads_met and uploads_met else "some goals were missed (above)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "read":
        page_size = int(sys.argv[4]) if len(sys.argv) > 4 else None
        print(json.dumps(read_cell(sys.argv[2], sys.argv[3], page_size)))
    else:
        sys.exit(main())
