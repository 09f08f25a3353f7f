"""Bucket uploads against the local service, each beside a baseline measured in the same run.

Starts `frameport serve` in a subprocess (so the client's and the service's memory are apart)
and prints:

1. `upload_dataframe` of a ~200 MB frame vs the floor: the frame's Parquet encode time plus
   raw chunk POSTs of prebuilt multipart bodies with httpx (first alone, then 4 at a time,
   as the client sends them). Goal: at most 1.2x.
2. `upload_file` of 500 MB (4 parts at a time) vs a sequential uploader that sends one 5 MiB
   part after the other with httpx: the speed-up.
3. The client's peak RSS while `upload_file` sends 1 GiB, over its RSS before the upload,
   measured in a subprocess of its own. Goal: at most 100 MB.

    .venv/bin/python benchmarks/upload.py [--frame-mb 200] [--file-mb 500] [--rss-mb 1024]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

from frameport._client import Client
from frameport._core._ids import ID
from frameport._transfer._upload import CHUNK_SIZE, plan_parts
from support.served import KEY, PROJECT, local_service

BUCKET = "bench"
MB = 1024 * 1024
CONCURRENCY = 4
FRAME_GOAL = 1.2
RSS_GOAL_MB = 100


def write_random_file(path: Path, size: int) -> Path:
    with path.open("wb") as out:
        for part in plan_parts(size):
            out.write(random.Random(part.index).randbytes(part.size))
    return path


def seconds(run: Callable[..., object], *args: object) -> float:
    """The wall-clock time of ``run(*args)``."""
    started = time.perf_counter()
    run(*args)
    return time.perf_counter() - started


def sample_frame(megabytes: int) -> pd.DataFrame:
    """A frame of about `megabytes` MB in memory: integers, floats and short category strings."""
    rows = megabytes * MB // 29  # bytes per row in memory
    generator = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "id": np.arange(rows, dtype=np.int64),
            "x": generator.random(rows),
            "y": generator.normal(size=rows),
            "city": pd.Categorical.from_codes(
                generator.integers(0, 4, rows), pd.Index(["Oslo", "Bergen", "Bodø", "Tromsø"])
            ),
            "n": generator.integers(0, 1000, rows, dtype=np.int32),
        }
    )


def prebuilt_chunk_bodies(data: bytes, file_id: str) -> list[tuple[bytes, dict[str, str]]]:
    """The multipart body and headers of every chunk of `data`, built before timing."""
    bodies = []
    size = len(data)
    for part in plan_parts(size):
        request = httpx.Request(
            "POST",
            "http://unused/",
            data={"fileId": file_id},
            files={"file": ("frame.parquet", data[part.start : part.end])},
        )
        headers = {
            "Content-Type": request.headers["Content-Type"],
            "Content-Range": part.content_range(size),
            "X-Service-ID": file_id,
        }
        bodies.append((request.read(), headers))
    return bodies


async def post_raw_chunks(
    endpoint: str,
    bodies: Sequence[tuple[bytes, dict[str, str]]],
    *,
    concurrency: int = CONCURRENCY,
    key: str = KEY,
    bucket: str = BUCKET,
) -> None:
    """The floor: the prebuilt chunks POSTed with httpx, first alone, then `concurrency` at a
    time."""
    headers = {"X-Service-Project": PROJECT, "X-Service-Key": key}
    slots = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=endpoint, headers=headers, timeout=600) as http:

        async def post(body: bytes, chunk_headers: dict[str, str]) -> None:
            async with slots:
                response = await http.post(
                    f"/storage/buckets/{bucket}/files", content=body, headers=chunk_headers
                )
                response.raise_for_status()

        await post(*bodies[0])
        await asyncio.gather(*(post(*body) for body in bodies[1:]))


def sequential_upload(endpoint: str, path: Path) -> None:
    """The baseline of the file benchmark: one 5 MiB part after the other."""
    headers = {"X-Service-Project": PROJECT, "X-Service-Key": KEY}
    size, file_id = path.stat().st_size, ID.unique()
    with (
        httpx.Client(base_url=endpoint, headers=headers, timeout=600) as http,
        path.open("rb") as f,
    ):
        for part in plan_parts(size):
            response = http.post(
                f"/storage/buckets/{BUCKET}/files",
                data={"fileId": file_id},
                files={"file": (path.name, f.read(part.size))},
                headers={"Content-Range": part.content_range(size), "X-Service-ID": file_id},
            )
            response.raise_for_status()


def frame_benchmark(client: Client, endpoint: str, megabytes: int, repeat: int) -> float:
    frame = sample_frame(megabytes)
    bucket = client.bucket(BUCKET)
    encode = posts = ours = float("inf")
    for _ in range(repeat):  # the two sides take turns, so both see the same conditions
        encoded = io.BytesIO()
        encode = min(encode, seconds(frame.to_parquet, encoded))
        data = encoded.getvalue()
        bodies = prebuilt_chunk_bodies(data, ID.unique())
        posts = min(posts, seconds(asyncio.run, post_raw_chunks(endpoint, bodies)))
        del bodies
        ours = min(ours, seconds(bucket.upload_dataframe, frame, "frame.parquet"))
    floor = encode + posts
    print(
        f"upload_dataframe, {frame.memory_usage(deep=True).sum() / MB:.0f} MB frame "
        f"({len(data) / MB:.0f} MB Parquet, {len(plan_parts(len(data)))} parts), best of {repeat}:"
    )
    print(f"  frameport      {ours:6.2f} s")
    print(f"  floor          {floor:6.2f} s  (encode {encode:.2f} s + raw POSTs {posts:.2f} s)")
    ratio = ours / floor
    print(f"  ratio          {ratio:6.2f}x  (goal <= {FRAME_GOAL}x)")
    return ratio


def file_benchmark(client: Client, endpoint: str, path: Path, repeat: int) -> float:
    bucket = client.bucket(BUCKET)
    sequential = ours = float("inf")
    for _ in range(repeat):
        sequential = min(sequential, seconds(sequential_upload, endpoint, path))
        ours = min(ours, seconds(bucket.upload_file, path))
    size = path.stat().st_size
    print(f"upload_file, {size / MB:.0f} MB ({len(plan_parts(size))} parts), best of {repeat}:")
    print(
        f"  frameport, {CONCURRENCY} parts at a time  {ours:6.2f} s  {size / MB / ours:5.0f} MiB/s"
    )
    print(
        f"  sequential, one part at a time  {sequential:6.2f} s  "
        f"{size / MB / sequential:5.0f} MiB/s"
    )
    print(f"  speed-up                        {sequential / ours:6.2f}x")
    return sequential / ours


RSS_CHILD = """
import json, sys, threading, time
import psutil
from frameport._client import Client

endpoint, project, key, bucket, path = sys.argv[1:]
process = psutil.Process()
client = Client(endpoint, project, key=key)
client.bucket(bucket).list_files()  # connections and the loop thread are up
baseline = peak = process.memory_info().rss
done = threading.Event()

def sample():
    global peak
    while not done.is_set():
        peak = max(peak, process.memory_info().rss)
        time.sleep(0.005)

sampler = threading.Thread(target=sample)
sampler.start()
uploaded = client.bucket(bucket).upload_file(path, progress=False)
done.set()
sampler.join()
print(json.dumps({"baseline": baseline, "peak": peak, "size": uploaded.size}))
"""


def rss_benchmark(endpoint: str, path: Path) -> float:
    run = subprocess.run(
        [sys.executable, "-c", RSS_CHILD, endpoint, PROJECT, KEY, BUCKET, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(run.stdout.strip().splitlines()[-1])
    growth = (figures["peak"] - figures["baseline"]) / MB
    print(f"client RSS during upload_file of {figures['size'] / MB:.0f} MB (a subprocess):")
    print(
        f"  baseline {figures['baseline'] / MB:.0f} MB, peak {figures['peak'] / MB:.0f} MB, "
        f"growth {growth:.0f} MB (goal <= {RSS_GOAL_MB} MB; "
        f"{CONCURRENCY} parts in flight = {CONCURRENCY * CHUNK_SIZE / MB:.0f} MB)"
    )
    return growth


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frame-mb", type=int, default=200)
    parser.add_argument("--file-mb", type=int, default=500)
    parser.add_argument("--rss-mb", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    args = parser.parse_args()
    os.environ["FRAMEPORT_PROGRESS"] = "0"
    with tempfile.TemporaryDirectory(prefix="frameport-bench-") as scratch:
        os.environ["FRAMEPORT_CACHE_DIR"] = str(Path(scratch) / "cache")
        with local_service(str(Path(scratch) / "service")) as endpoint:
            with Client(endpoint, PROJECT, key=KEY) as client:
                client.create_bucket(BUCKET, exist_ok=True)
                frame_ratio = frame_benchmark(client, endpoint, args.frame_mb, args.repeat)
                source = write_random_file(Path(scratch) / "file.bin", args.file_mb * MB)
                file_benchmark(client, endpoint, source, args.repeat)
                source.unlink()
            big = write_random_file(Path(scratch) / "big.bin", args.rss_mb * MB)
            growth = rss_benchmark(endpoint, big)
    return 0 if frame_ratio <= FRAME_GOAL and growth <= RSS_GOAL_MB else 1


if __name__ == "__main__":
    sys.exit(main())
