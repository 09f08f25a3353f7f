"""Compressed answers: what the service's compression costs a default read, and what each
encoding costs per page on both sides.

Printed, in one run:

1. The default ``to_pandas`` of a 200,000-row table (sample people) against the local service
   with compression on (the default; frameport's httpx accepts ``gzip, deflate, br, zstd``, so
   the service answers gzip) and off (``--compression off``), each its own ``frameport serve``
   over the same data: the read's seconds (best of ``--repeat``), rows/s, the client's CPU
   seconds, and the ratios on/off.
2. Against the service with compression on, each read in a fresh process (best of
   ``--repeat``, the client and its connection made in the read; imported before it,
   pandas and each contender's library with its HTTP stack: requests with urllib3, frameport
   with httpx and httpcore, which httpx imports at its first client, 0.09 s): the
   default ``to_pandas`` (``compression="auto"``), ``to_pandas`` with each fixed
   ``compression`` (``"gzip"`` is what httpx's default ``Accept-Encoding`` got before the
   client chose), and the service's reference client paging the same table into pandas:
   ``requests`` with its default ``Accept-Encoding``, ``limit`` 5000 and ``cursorAfter``, one
   JSON decode per page, a Pydantic model per row, then ``pd.DataFrame`` of the rows' dicts.
   Goals: the default >= 10x the reference client, and >= 0.95x the best fixed setting.
3. Per encoding, one 5000-row page (the page size frameport asks for): the service's CPU to
   compress it at the service's level and the client's CPU to inflate it, in milliseconds,
   and the compressed size as a fraction of the plain body.

The service and the client share this machine's cores: compare the ratios more than the
absolute figures. A read in a fresh process takes about 0.6 s and swings by a tenth from run
to run, as much as the gap between ``"auto"`` and ``"off"`` (which near send the same
requests but the first), hence five rounds.

    .venv/bin/python benchmarks/compression.py [--rows 200000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import httpx

from frameport.local._compression import ENCODERS
from partitioned import load_people
from read import DATABASE, INFLATERS, PROJECT
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


REFERENCE_GOAL = 10.0  # the default to_pandas against the reference client, at least
AUTO_GOAL = 0.95  # the default against the best fixed compression, at least
FRESH_READS = ("auto", "off", "zstd", "gzip", "reference")


def reference_client(endpoint: str) -> int:
    """The service's reference client paging the table into pandas, as its users write it."""
    from datetime import datetime

    import pandas as pd
    import pydantic
    import requests

    class Person(pydantic.BaseModel):
        id: str = pydantic.Field(alias="$id")
        sequence: int = pydantic.Field(alias="$sequence")
        created_at: datetime = pydantic.Field(alias="$createdAt")
        updated_at: datetime = pydantic.Field(alias="$updatedAt")
        permissions: list[str] = pydantic.Field(alias="$permissions")
        name: str | None = None
        age: int | None = None
        city: str | None = None
        score: float | None = None
        signup: datetime | None = None
        active: bool | None = None

    rows: list[dict[str, object]] = []
    cursor: str | None = None
    with requests.Session() as session:
        session.headers.update({"X-Service-Project": PROJECT, "X-Service-Key": KEY})
        while True:
            queries = [json.dumps({"method": "limit", "values": [PAGE_ROWS]})]
            if cursor is not None:
                queries.append(json.dumps({"method": "cursorAfter", "values": [cursor]}))
            answer = session.get(
                f"{endpoint}/tablesdb/{DATABASE}/tables/people/rows",
                params={"queries[]": queries},
                timeout=60,
            )
            answer.raise_for_status()
            page = [Person.model_validate(row) for row in answer.json()["rows"]]
            rows.extend(person.model_dump(by_alias=True) for person in page)
            if len(page) < PAGE_ROWS:
                break
            cursor = page[-1].id
    return len(pd.DataFrame(rows))


def fresh_read(kind: str, endpoint: str) -> float:
    """Seconds of one read of `kind` (one of `FRESH_READS`) in this process, after imports."""
    # Imported before the clock starts: pandas for every kind, and each contender's own.
    import pandas  # noqa: F401

    if kind == "reference":
        import pydantic  # noqa: F401
        import requests  # noqa: F401  (with urllib3, its HTTP stack)
    else:
        import httpcore  # noqa: F401  (httpx's HTTP stack, imported by its first client)

        from frameport._client import Client

    started = time.perf_counter()
    if kind == "reference":
        reference_client(endpoint)
    else:
        with Client(endpoint, PROJECT, key=KEY, compression=kind) as client:  # type: ignore[arg-type]
            client.table(DATABASE, "people").to_pandas(progress=False)
    return time.perf_counter() - started


def fresh_seconds(endpoint: str, repeat: int) -> dict[str, float]:
    """The best seconds of `repeat` reads of each of `FRESH_READS`, each in a fresh process,
    in rounds that take every kind once (after one read that warms the service up), so that
    no kind gains from coming later."""

    def read(kind: str) -> float:
        command = [sys.executable, __file__, "read", kind, endpoint]
        run = subprocess.run(command, check=True, capture_output=True, text=True)
        return float(run.stdout.strip().splitlines()[-1])

    read("off")
    best = dict.fromkeys(FRESH_READS, float("inf"))
    for _ in range(repeat):
        for kind in FRESH_READS:
            best[kind] = min(best[kind], read(kind))
    return best


def cpu_ms(run: Callable[[], object], repeat: int = 20) -> float:
    """CPU milliseconds of one `run`, the best of `repeat`."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best * 1000


def one_page(endpoint: str) -> bytes:
    limit = json.dumps({"method": "limit", "values": [PAGE_ROWS]})
    headers = {"X-Service-Project": PROJECT, "X-Service-Key": KEY}
    path = f"{endpoint}/tablesdb/{DATABASE}/tables/people/rows"
    return httpx.get(path, params={"queries[]": limit}, headers=headers, timeout=60).content


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
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
            fresh = fresh_seconds(endpoint, args.repeat)
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
    print(f"compression on, each read in a fresh process (best of {args.repeat}):")
    for kind, seconds in fresh.items():
        name = "reference client" if kind == "reference" else f"to_pandas compression={kind!r}"
        print(f"  {name:36} {seconds:6.2f} s  {args.rows / seconds:>9,.0f} rows/s")
    best_fixed = min(fresh[kind] for kind in ("off", "zstd", "gzip"))
    print(f"  default / reference client: {fresh['reference'] / fresh['auto']:5.2f}x "
          f"(goal >= {REFERENCE_GOAL:g}); default / best fixed: {best_fixed / fresh['auto']:4.2f}x "
          f"(goal >= {AUTO_GOAL:g})")  # fmt: skip
    print(f"one page of {PAGE_ROWS} rows ({len(page) / 1e6:.2f} MB plain), CPU per page:")
    for name, encode in ENCODERS.items():
        if encode is None:
            continue
        packed = encode(page)
        assert INFLATERS[name](packed) == page
        print(
            f"  {name:>7}: service compress {cpu_ms(partial(encode, page)):6.1f} ms  "
            f"client inflate {cpu_ms(partial(INFLATERS[name], packed)):5.1f} ms  "
            f"size {len(packed) / len(page):.3f} of plain"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "read":
        print(fresh_read(sys.argv[2], sys.argv[3]))
    else:
        main()
