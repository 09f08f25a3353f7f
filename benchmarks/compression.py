"""Compressed answers: what the service's compression costs a default read, and what each
encoding costs per page on both sides.

Printed, in one run:

1. The default ``to_pandas`` of a 200,000-row table (sample people) against the local service
   with compression on (the default; frameport's httpx accepts ``gzip, deflate, br, zstd``, so
   the service answers gzip) and off (``--compression off``), each its own ``frameport serve``
   over the same data: the read's seconds (best of ``--repeat``), rows/s, the client's CPU
   seconds, and the ratios on/off.
2. Per encoding, one 5000-row page (the page size frameport asks for): the service's CPU to
   compress it at the service's level and the client's CPU to inflate it, in milliseconds,
   and the compressed size as a fraction of the plain body.

The service and the client share this machine's cores: compare the ratios more than the
absolute figures.

    .venv/bin/python benchmarks/compression.py [--rows 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
import zlib
from collections.abc import Callable
from functools import partial
from pathlib import Path

import brotli
import httpx
import zstandard

from frameport.local._compression import ENCODERS
from partitioned import load_people
from read import DATABASE, PROJECT
from support.served import KEY, local_service

PAGE_ROWS = 5000


def client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def default_read(endpoint: str, repeat: int) -> dict[str, float]:
    """Best wall seconds, and the client's CPU seconds of that read."""
    from frameport._client import Client

    best: dict[str, float] = {"seconds": float("inf")}
    with Client(endpoint, PROJECT, key=KEY) as client:
        table = client.table(DATABASE, "people")
        table.head(1).to_pandas(progress=False)  # imports, a connection and the loop are warm
        for _ in range(repeat):
            cpu, started = client_cpu(), time.perf_counter()
            frame = table.to_pandas(progress=False)
            seconds = time.perf_counter() - started
            if seconds < best["seconds"]:
                best = {"seconds": seconds, "cpu": client_cpu() - cpu}
        best["rows"] = len(frame)
    return best


def cpu_ms(run: Callable[[], object], repeat: int = 20) -> float:
    """CPU milliseconds of one `run`, the best of `repeat`."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best * 1000


DECODERS: dict[str, Callable[[bytes], bytes]] = {
    "zstd": lambda body: zstandard.ZstdDecompressor().decompressobj().decompress(body),
    "br": lambda body: bytes(brotli.decompress(body)),
    "gzip": lambda body: zlib.decompress(body, 16 + zlib.MAX_WBITS),
    "deflate": lambda body: zlib.decompress(body, -zlib.MAX_WBITS),
}


def one_page(endpoint: str) -> bytes:
    limit = json.dumps({"method": "limit", "values": [PAGE_ROWS]})
    headers = {"X-Service-Project": PROJECT, "X-Service-Key": KEY}
    path = f"{endpoint}/tablesdb/{DATABASE}/tables/people/rows"
    return httpx.get(path, params={"queries[]": limit}, headers=headers, timeout=60).content


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "service"
        reads: dict[str, dict[str, float]] = {}
        with local_service(data, ["--compression", "off"]) as endpoint:
            load_people(endpoint, args.rows)
            page = one_page(endpoint)
            reads["off"] = default_read(endpoint, args.repeat)
        with local_service(data) as endpoint:
            reads["on"] = default_read(endpoint, args.repeat)
    print(f"default to_pandas of {args.rows:,} rows (best of {args.repeat}):")
    for name, read in reads.items():
        print(
            f"  compression {name:>3}: {read['seconds']:6.2f} s  "
            f"{read['rows'] / read['seconds']:>9,.0f} rows/s  client CPU {read['cpu']:5.2f} s"
        )
    on, off = reads["on"], reads["off"]
    print(
        f"  on/off: time {on['seconds'] / off['seconds']:.2f}x, client CPU "
        f"{on['cpu'] / off['cpu']:.2f}x"
    )
    print(f"one page of {PAGE_ROWS} rows ({len(page) / 1e6:.2f} MB plain), CPU per page:")
    for name, encode in ENCODERS.items():
        if encode is None:
            continue
        packed = encode(page)
        assert DECODERS[name](packed) == page
        print(
            f"  {name:>7}: service compress {cpu_ms(partial(encode, page)):6.1f} ms  "
            f"client inflate {cpu_ms(partial(DECODERS[name], packed)):5.1f} ms  "
            f"size {len(packed) / len(page):.3f} of plain"
        )


if __name__ == "__main__":
    main()
