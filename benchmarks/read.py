"""Reading a table: frameport against a naive loop and the parse-only floor, and its memory.

Pages are recorded once from the local service (100,000 sample people, 20 pages of 5000 rows),
then served by a minimal replay server in its own process, so the client is measured, not the
service. The replay server answers the table model and each page by cursor; for tables larger
than the recording it serves the pages again with the last row's ``$id`` rewritten, so every
cursor is unique. It also answers what parallel reads send (`benchmarks/partitioned.py`):
ranges of ``$sequence`` on page boundaries and the one-row requests for the first and last
row. Printed, in one run:

* rows/s of (a) a naive loop: httpx + json.loads per page, one ``pd.DataFrame`` at the end;
  (b) frameport ``to_pandas`` (its default, ``parallel="auto"``) and serial (``parallel=1``),
  both with ``system=True``, so that they build every field the naive loop builds;
  (c) frameport ``to_parquet``; (d) the parse limit: every recorded page parsed by Arrow's
  JSON reader with the explicit schema (``decode_page``), on every core at once, no HTTP;
  and the ratios (b)/(a) (goal ≥ 6) and (b)/(d) (goal ≥ 0.8); each the best of `--repeat`
  runs after a warm-up;
* where a read's time goes, per page: each of those, and the steps of a read measured apart,
  fetching the body (httpx, no parsing), decoding it on one core, assembling the frame
  (``Table.from_batches`` + ``to_pandas``); each as wall time and as the CPU time it took
  in this process and in the replay server (the mean of the runs). From these, the floor:
  every page must be fetched, decoded and assembled, so no read of the replay can beat that
  CPU time divided by the cores (nor the fetches' wall time, one after the other); printed
  as the best ratios any read could reach against the two goals on this machine, and what
  would reach them (more cores, or how much cheaper a page's steps must be);
* peak memory of ``to_pandas`` against the final frame's size, for 100,000 and 200,000 rows
  (goal ≤ 1.5× at 200,000), and the peak RSS growth of ``to_parquet`` for 100,000 and
  1,000,000 rows (goals: ≤ 150 MB, and the 1M figure ≤ 1.25× the 100k one), each measured
  in a fresh subprocess by the kernel's high-water mark.

    .venv/bin/python benchmarks/read.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import brotli
import zstandard

T = TypeVar("T")

PAGE_ROWS = 5000
NAIVE_GOAL = 8.0  # to_pandas against the naive loop, at least
LIMIT_GOAL = 1.0  # to_pandas against the parse limit, at least
MEMORY_GOAL = 1.5  # to_pandas's peak RSS growth against its frame, at most
ENCODINGS = {  # the Accept-Encoding of each split; gzip is what httpx asks by default
    "identity": "identity",
    "zstd": "zstd",
    "gzip (httpx's default ask)": "gzip, deflate, br, zstd",
    "br": "br",
}
RECORDED_ROWS = 100_000
MEMORY_GOAL_ROWS = 200_000  # the read the memory goal is set for
MEMORY_ROWS = (RECORDED_ROWS, MEMORY_GOAL_ROWS)
DATABASE = "bench"
PROJECT = "bench"


# ---------------------------------------------------------------------------------------------
# Recording


def record(directory: Path) -> None:
    """Load the sample into a local service and save the table model and every page body."""
    import httpx

    from frameport import ID
    from frameport._core._pages import last_row_id
    from frameport._demo import sample_people
    from frameport.local import LocalService

    with LocalService() as service, service.client() as client:
        people = sample_people(RECORDED_ROWS)
        table = client.create_table(DATABASE, "people", schema=people)
        # IDs of the service's own form (20 characters), which the replay rewrites in place.
        people.insert(0, "$id", [ID.unique() for _ in range(RECORDED_ROWS)])
        table.insert(people, progress=False)
        headers = {"X-Service-Project": service.project, "X-Service-Key": service.key}
        with httpx.Client(base_url=service.endpoint, headers=headers, timeout=60) as http:
            model = http.get(f"/tablesdb/{DATABASE}/tables/people").content
            (directory / "table.json").write_bytes(model)
            cursor: str | None = None
            for number in range(RECORDED_ROWS // PAGE_ROWS):
                queries = [json.dumps({"method": "limit", "values": [PAGE_ROWS]})]
                if cursor is not None:
                    queries.append(json.dumps({"method": "cursorAfter", "values": [cursor]}))
                body = http.get(
                    f"/tablesdb/{DATABASE}/tables/people/rows", params={"queries[]": queries}
                ).content
                (directory / f"page-{number:03d}.json").write_bytes(body)
                cursor = last_row_id(body)


# ---------------------------------------------------------------------------------------------
# The replay server (its own process)


def replay_id(page: int) -> str:
    """The `$id` the replay server gives the last row of page `page`."""
    return f"r{page:019d}"


class Replay:
    """The recorded pages, served by cursor for a table of any multiple of 5000 rows."""

    def __init__(self, directory: Path) -> None:
        from frameport._core._pages import last_row_id

        self.model = (directory / "table.json").read_bytes()
        self.pages: list[tuple[bytes, int]] = []
        for path in sorted(directory.glob("page-*.json")):
            body = path.read_bytes()
            last = last_row_id(body)
            assert last is not None and len(last) == 20
            self.pages.append((body, body.rindex(f'"{last}"'.encode()) + 1))

    def page(self, number: int) -> bytes:
        body, at = self.pages[number % len(self.pages)]
        return body[:at] + replay_id(number).encode() + body[at + 20 :]

    def answer(self, rows: int, queries: list[dict[str, Any]]) -> bytes:
        """The body answering a rows request of a `rows`-row table: the page after the
        cursor, within the ``$sequence`` range the filter gives (on page boundaries: page `n`
        holds ``n * 5000 < $sequence <= (n + 1) * 5000``); for ``limit 1`` ordered by
        ``$sequence``, the first or the last row alone."""
        start, end, number, limit, order = 0, rows // PAGE_ROWS, None, PAGE_ROWS, ""
        for query in queries:
            method, values = query["method"], query.get("values", [])
            if method == "cursorAfter":
                number = int(values[0][1:]) + 1
            elif method == "greaterThan":
                start = int(values[0]) // PAGE_ROWS
            elif method == "lessThanEqual":
                end = min(end, int(values[0]) // PAGE_ROWS)
            elif method == "limit":
                limit = int(values[0])
            elif method in ("orderAsc", "orderDesc"):
                order = method
        if order and limit == 1:
            sequence = 1 if order == "orderAsc" else rows
            row = {"$id": f"s{sequence:019d}", "$sequence": sequence, "$permissions": []}
            return json.dumps({"total": min(rows, 5000), "rows": [row]}).encode()
        number = start if number is None else number
        return self.page(number) if number < end else b'{"total":5000,"rows":[]}'


def accept_encoding(head: bytes) -> str:
    """The ``Accept-Encoding`` of a request's head ("" when it has none)."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"accept-encoding":
            return value.strip().decode()
    return ""


def serve(directory: Path, port_file: Path, delay: float = 0.0) -> None:
    """Serve the recording (HTTP/1.1, keep-alive); each rows request waits `delay` seconds
    first (a distant service). Answers are compressed as the service compresses them (its
    choice by ``Accept-Encoding``, its levels), each body once: later asks get the same
    bytes. A bare asyncio server: http.server spent ~3 ms of CPU per page, more than the
    client's fetch, on the cores the client runs on, and its separate header and body writes
    held small answers for a delayed ACK (40 ms)."""
    from frameport.local._compression import ENCODERS, MINIMUM_SIZE, choose_encoding

    replay = Replay(directory)

    def body_for(target: str) -> bytes:
        url = urlsplit(target)
        parts = url.path.strip("/").split("/")
        if parts[-1] != "rows":
            return replay.model
        rows = int(parts[-2].removeprefix("rows-"))
        queries = [json.loads(text) for text in parse_qs(url.query).get("queries[]", [])]
        return replay.answer(rows, queries)

    compressed: dict[tuple[str, str], bytes] = {}  # every contender gets the same bytes

    def encoded(target: str, encoding: str | None) -> tuple[bytes, bytes]:
        body = body_for(target)
        if encoding is None or len(body) <= MINIMUM_SIZE:
            return body, b""
        if (target, encoding) not in compressed:
            encode = ENCODERS[encoding]
            assert encode is not None
            compressed[target, encoding] = encode(body)
        return compressed[target, encoding], b"Content-Encoding: %s\r\n" % encoding.encode()

    async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")  # GET requests: no body
                target = head.split(b" ", 2)[1].decode()
                if urlsplit(target).path.endswith("/rows"):
                    await asyncio.sleep(delay)
                body, encoding = encoded(target, choose_encoding(accept_encoding(head)))
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%s"
                    b"Content-Length: %d\r\n\r\n" % (encoding, len(body))
                )
                writer.write(body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def run() -> None:
        server = await asyncio.start_server(exchange, "127.0.0.1", 0, limit=2**20)
        port_file.write_text(str(server.sockets[0].getsockname()[1]))
        await server.serve_forever()

    asyncio.run(run())


@contextmanager
def replay_server(directory: Path, delay: float = 0.0) -> Iterator[str]:
    with replay_process(directory, delay) as (endpoint, _):
        yield endpoint


@contextmanager
def replay_process(directory: Path, delay: float = 0.0) -> Iterator[tuple[str, int]]:
    """The replay server's endpoint and process ID, while it runs."""
    port_file = directory / "port"
    port_file.unlink(missing_ok=True)
    command = [sys.executable, __file__, "serve", str(directory), str(port_file), str(delay)]
    process = subprocess.Popen(command)
    try:
        while not port_file.exists() or not port_file.read_text():
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/v1", process.pid
    finally:
        process.terminate()
        process.wait()


def rows_path(rows: int) -> str:
    return f"/tablesdb/{DATABASE}/tables/rows-{rows}/rows"


# ---------------------------------------------------------------------------------------------
# The contenders


def naive_loop(endpoint: str, rows: int) -> int:
    """What a notebook user writes without frameport: page by cursor, one frame at the end."""
    import httpx
    import pandas as pd

    collected: list[dict[str, Any]] = []
    cursor: str | None = None
    with httpx.Client(base_url=endpoint, headers={"X-Service-Project": PROJECT}) as http:
        while True:
            queries = [json.dumps({"method": "limit", "values": [PAGE_ROWS]})]
            if cursor is not None:
                queries.append(json.dumps({"method": "cursorAfter", "values": [cursor]}))
            page = json.loads(http.get(rows_path(rows), params={"queries[]": queries}).content)
            collected.extend(page["rows"])
            if len(page["rows"]) < PAGE_ROWS:
                break
            cursor = page["rows"][-1]["$id"]
    return len(pd.DataFrame(collected))


def frameport_table(endpoint: str, rows: int) -> Any:
    from frameport._client import Client

    client = Client(endpoint, PROJECT, key="standard_bench")
    return client, client.table(DATABASE, f"rows-{rows}")


def frameport_pandas(endpoint: str, rows: int) -> int:
    client, table = frameport_table(endpoint, rows)
    with client:
        return len(table.to_pandas(progress=False, system=True))


def frameport_parquet(endpoint: str, rows: int) -> int:
    client, table = frameport_table(endpoint, rows)
    with client, tempfile.TemporaryDirectory() as directory:
        report = table.to_parquet(Path(directory) / "out.parquet", progress=False, system=True)
        return int(report.rows)


def frameport_serial(endpoint: str, rows: int) -> int:
    client, table = frameport_table(endpoint, rows)
    with client:
        return len(table.to_pandas(progress=False, parallel=1, system=True))


def parse_limit(directory: Path, rows: int) -> int:
    """Arrow's JSON reader (through `decode_page`) over the recorded bytes on every core at
    once (one thread per core; the reader releases the GIL), nothing else."""
    from frameport._schema import arrow_schema
    from frameport._tables._decode import decode_page

    replay = Replay(directory)
    schema = arrow_schema(json.loads(replay.model)["columns"])
    bodies = [replay.pages[number % len(replay.pages)][0] for number in range(rows // PAGE_ROWS)]
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        return sum(
            batch.num_rows for _, batch in pool.map(lambda b: decode_page(b, schema), bodies)
        )


async def fetch_all(http: Any, rows: int) -> None:
    """Every page of the `rows`-row table through the ``httpx.AsyncClient`` `http`, on one
    event loop as frameport's: each body read whole and the next cursor found in it."""
    from frameport._core._pages import last_row_id

    cursor: str | None = None
    for _ in range(rows // PAGE_ROWS):
        queries = [json.dumps({"method": "limit", "values": [PAGE_ROWS]})]
        if cursor is not None:
            queries.append(json.dumps({"method": "cursorAfter", "values": [cursor]}))
        response = await http.get(rows_path(rows), params={"queries[]": queries})
        cursor = last_row_id(response.content)


@dataclass(frozen=True)
class StepCost:
    """Milliseconds per page of one step: its wall time (best of the runs), and the CPU time
    it took in this process (every thread) and in the replay server (both summed over the
    runs, then divided by every page they read)."""

    wall: float
    client_cpu: float
    server_cpu: float

    @property
    def cpu(self) -> float:
        return self.client_cpu + self.server_cpu


def process_cpu_seconds(pid: int | None = None) -> float:
    """User and system CPU seconds of a process so far (None: this one, every thread)."""
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def step_cost(run: Callable[[], object], pages: int, server: int, repeat: int) -> StepCost:
    """What `run` (which reads `pages` pages) costs per page, over `repeat` runs after one
    that warms it up (imports, connections)."""
    run()
    wall, client, served = float("inf"), 0.0, 0.0
    for _ in range(repeat):
        client_before, server_before = process_cpu_seconds(), process_cpu_seconds(server)
        started = time.perf_counter()
        run()
        wall = min(wall, time.perf_counter() - started)
        client += process_cpu_seconds() - client_before
        served += process_cpu_seconds(server) - server_before
    per_page = 1e3 / pages
    return StepCost(wall * per_page, client * per_page / repeat, served * per_page / repeat)


def page_costs(
    endpoint: str, server: int, directory: Path, rows: int, repeat: int
) -> dict[str, StepCost]:
    """What each contender and each step of a read costs per page, measured apart.

    The fetch is `fetch_all`, asking for plain answers."""
    import httpx
    import pyarrow as pa

    from frameport._schema import arrow_schema, to_pandas
    from frameport._tables._decode import decode_page

    pages = rows // PAGE_ROWS
    replay = Replay(directory)
    schema = arrow_schema(json.loads(replay.model)["columns"])

    bodies = [replay.pages[number % len(replay.pages)][0] for number in range(pages)]
    batches = [decode_page(body, schema)[1] for body in bodies]
    with asyncio.Runner() as runner:  # one loop and one client, as a frameport read has
        http = httpx.AsyncClient(base_url=endpoint, headers={"Accept-Encoding": "identity"})
        steps: dict[str, Callable[[], object]] = {
            NAIVE: lambda: naive_loop(endpoint, rows),
            AUTO: lambda: frameport_pandas(endpoint, rows),
            SERIAL: lambda: frameport_serial(endpoint, rows),
            PARQUET: lambda: frameport_parquet(endpoint, rows),
            PARSE_LIMIT: lambda: parse_limit(directory, rows),
            FETCH: lambda: runner.run(fetch_all(http, rows)),
            DECODE: lambda: [decode_page(body, schema) for body in bodies],
            ASSEMBLE: lambda: to_pandas(pa.Table.from_batches(batches)),
        }
        costs = {name: step_cost(run, pages, server, repeat) for name, run in steps.items()}
        runner.run(http.aclose())
    return costs


INFLATERS: dict[str, Callable[[bytes], bytes]] = {
    "zstd": lambda body: zstandard.ZstdDecompressor().decompressobj().decompress(body),
    "br": lambda body: bytes(brotli.decompress(body)),
    "gzip": lambda body: zlib.decompress(body, 16 + zlib.MAX_WBITS),
    "deflate": lambda body: zlib.decompress(body, -zlib.MAX_WBITS),
}
"""`Content-Encoding` → the inflater httpx uses for it (the same libraries)."""


@dataclass(frozen=True)
class EncodingCost:
    """Per page, for one encoding: the bytes on the wire, and each step's cost."""

    wire_bytes: float
    fetch: StepCost  # httpx, inflating included
    inflate: StepCost  # the inflater alone, over the same bytes


def encoding_costs(
    endpoint: str, server: int, directory: Path, rows: int, repeat: int
) -> dict[str, EncodingCost]:
    """What fetching a page costs asked with each of `ENCODINGS`, and inflating it alone."""
    with asyncio.Runner() as runner:
        return {
            name: encoding_cost(runner, endpoint, accept, server, directory, rows, repeat)
            for name, accept in ENCODINGS.items()
        }


def encoding_cost(
    runner: asyncio.Runner,
    endpoint: str,
    accept: str,
    server: int,
    directory: Path,
    rows: int,
    repeat: int,
) -> EncodingCost:
    """What fetching a page with the ``Accept-Encoding`` `accept` costs, and inflating the
    same bytes alone."""
    import httpx

    from frameport.local._compression import ENCODERS, choose_encoding

    pages = rows // PAGE_ROWS
    http = httpx.AsyncClient(base_url=endpoint, headers={"Accept-Encoding": accept})
    fetch = step_cost(lambda: runner.run(fetch_all(http, rows)), pages, server, repeat)
    runner.run(http.aclose())
    replay = Replay(directory)
    bodies = [replay.page(number) for number in range(pages)]
    encoding = choose_encoding(accept)
    if encoding is None:
        return EncodingCost(sum(map(len, bodies)) / pages, fetch, StepCost(0.0, 0.0, 0.0))
    encode, inflate = ENCODERS[encoding], INFLATERS[encoding]
    assert encode is not None
    packed = [encode(body) for body in bodies]
    inflating = step_cost(lambda: [inflate(body) for body in packed], pages, server, repeat)
    return EncodingCost(sum(map(len, packed)) / pages, fetch, inflating)


def print_encoding_costs(encodings: dict[str, EncodingCost], costs: dict[str, StepCost]) -> None:
    """The client's CPU per page split into fetch (httpx, inflating excluded), inflate,
    decode and assemble, for each encoding."""
    decode, assemble = costs[DECODE].client_cpu, costs[ASSEMBLE].client_cpu
    print(f"\nthe client's CPU per page of {PAGE_ROWS} rows, by the encoding asked for (ms):")
    print(f"  {'':28} {'wire MB':>8} {'fetch':>7} {'inflate':>8} {'decode':>7} {'assemble':>9}"
          f" {'total':>7}")  # fmt: skip
    for name, cost in encodings.items():
        inflate = cost.inflate.client_cpu
        fetch = max(0.0, cost.fetch.client_cpu - inflate)
        total = fetch + inflate + decode + assemble
        print(f"  {name:28} {cost.wire_bytes / 1e6:8.3f} {fetch:7.2f} {inflate:8.2f} "
              f"{decode:7.2f} {assemble:9.2f} {total:7.2f}")  # fmt: skip


def rate(cost: StepCost) -> float:
    """Rows per second at `cost`'s wall time per page."""
    return PAGE_ROWS / cost.wall * 1e3


NAIVE = "naive loop (httpx + json + DataFrame)"
AUTO = "frameport to_pandas"
SERIAL = "frameport to_pandas, parallel=1"
PARQUET = "frameport to_parquet"
PARSE_LIMIT = "parse limit (read_json, every core)"
CONTENDERS = (NAIVE, AUTO, SERIAL, PARQUET, PARSE_LIMIT)
FETCH = "fetch (httpx, body only)"
DECODE = "decode (one core)"
ASSEMBLE = "assemble (from_batches + to_pandas)"


def print_floor(costs: dict[str, StepCost]) -> None:
    """The fastest any read of the replay can be on this machine's cores, from the steps'
    costs: every page must be fetched (the client's and the server's CPU), decoded (at its
    cost with every core decoding, the parse limit's) and assembled, so the cores must spend
    at least that much CPU per page; and the cursor chain fetches one page after the other,
    so the read takes at least the fetches' wall time. Printed against the two throughput
    goals, with what reaching each would take (cores, or cheaper steps), and what the CPU
    time frameport's own reads spend would allow."""
    cores = os.cpu_count() or 1
    fetch, parse, assemble = costs[FETCH], costs[PARSE_LIMIT], costs[ASSEMBLE]
    work = fetch.cpu + parse.client_cpu + assemble.client_cpu
    floor = max(work / cores, fetch.wall)
    naive, limit = rate(costs[NAIVE]), rate(parse)

    def ratios(milliseconds: float) -> str:
        fastest = PAGE_ROWS / milliseconds * 1e3
        return f"{fastest / naive:5.2f}x the naive loop, {fastest / limit:4.2f}x the parse limit"

    print(
        f"\nthe floor, per page: fetch {fetch.cpu:.2f} + decode {parse.client_cpu:.2f} (with "
        f"every core decoding) + assemble {assemble.client_cpu:.2f} = {work:.2f} ms of CPU,"
    )
    print(f"and {fetch.wall:.2f} ms of fetching, one page after the other: no read of the replay "
          f"beats {floor:.2f} ms a page on {cores} cores:")  # fmt: skip
    print(f"  at best {ratios(floor)}  (goals: >= {NAIVE_GOAL:g}, >= {LIMIT_GOAL:g})")
    # What would reach the goals: the page time each one allows, as CPU on these cores.
    naive_page, limit_page = costs[NAIVE].wall / NAIVE_GOAL, parse.wall / LIMIT_GOAL
    fetch_and_assemble = fetch.cpu + assemble.client_cpu
    print("what the goals ask for:")
    print(f"  {NAIVE_GOAL:g}x the naive loop: at most {naive_page:.2f} ms a page, "
          f"{naive_page * cores:.2f} ms of CPU on {cores} cores against the floor's {work:.2f}: "
          f"{math.ceil(work / naive_page)} cores at these costs, or a page's work "
          f"{max(0.0, 1 - naive_page * cores / work):.0%} cheaper")  # fmt: skip
    print(f"  {LIMIT_GOAL:g}x the parse limit: at most {limit_page:.2f} ms a page; the limit "
          f"decodes on every core, so more cores speed up both: fetching and assembling a page "
          f"may cost at most {limit_page * cores - parse.client_cpu:.2f} ms of CPU "
          f"(now {fetch_and_assemble:.2f})")  # fmt: skip
    print("the CPU time of frameport's reads, perfectly spread over the cores, would allow:")
    for name in (AUTO, SERIAL):
        cost = costs[name]
        print(f"  {name:32} {cost.cpu:5.2f} ms a page (wall {cost.wall:.2f}): "
              f"{ratios(cost.cpu / cores)}")  # fmt: skip


def best_seconds(run: Callable[[], object], repeat: int) -> float:
    """The seconds of the fastest of `repeat` runs."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def best_rate(run: Callable[[], int], repeat: int) -> float:
    """Rows per second of the fastest of `repeat` runs."""
    rows = 0

    def counted() -> None:
        nonlocal rows
        rows = run()

    seconds = best_seconds(counted, repeat)
    return rows / seconds


# ---------------------------------------------------------------------------------------------
# Memory, one case per subprocess


def peak_growth(run: Callable[[], T]) -> tuple[T, float, float]:
    """`run()`'s result, its seconds and the peak growth (bytes) of this process's RSS while
    it ran (the kernel's high-water mark, see `support.memory.PeakRss`)."""
    from support.memory import PeakRss

    with PeakRss() as rss:
        started = time.perf_counter()
        result = run()
        elapsed = time.perf_counter() - started
    return result, elapsed, float(rss.peak - rss.start)


def memory_case(case: str, endpoint: str, rows: int) -> dict[str, float]:
    """Peak RSS growth (bytes) of one read."""
    client, table = frameport_table(endpoint, rows)
    table.head(1).to_pandas(progress=False)  # imports, connections and the loop are warm
    result: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as directory:
        if case == "pandas":
            frame, _, growth = peak_growth(lambda: table.to_pandas(progress=False, system=True))
            result["frame_bytes"] = float(frame.memory_usage(deep=True).sum())
        else:
            path = Path(directory) / "out.parquet"
            _, _, growth = peak_growth(lambda: table.to_parquet(path, progress=False))
    client.close()
    result["peak_growth"] = growth
    return result


def measure_memory(case: str, endpoint: str, rows: int) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, __file__, "memory", case, endpoint, str(rows)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(output.strip().splitlines()[-1])
    return result


# ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ["FRAMEPORT_PROGRESS"] = "0"
    with tempfile.TemporaryDirectory(prefix="frameport-bench-") as temporary:
        directory = Path(temporary)
        print(f"recording {RECORDED_ROWS:,} rows from the local service ...", flush=True)
        record(directory)
        size = sum(p.stat().st_size for p in directory.glob("page-*.json"))
        print(f"  {len(list(directory.glob('page-*.json')))} pages, {size / 2**20:.1f} MiB")
        rows = RECORDED_ROWS
        with replay_process(directory) as (endpoint, server):
            costs = page_costs(endpoint, server, directory, rows, args.repeat)
            encodings = encoding_costs(endpoint, server, directory, rows, args.repeat)
            pandas_memory = {
                read_rows: measure_memory("pandas", endpoint, read_rows)
                for read_rows in MEMORY_ROWS
            }
            parquet_small = measure_memory("parquet", endpoint, 100_000)
            parquet_large = measure_memory("parquet", endpoint, 1_000_000)
    naive, to_pandas, limit = rate(costs[NAIVE]), rate(costs[AUTO]), rate(costs[PARSE_LIMIT])
    print(f"\nthroughput over {rows:,} rows (best of {args.repeat}):")
    for name in CONTENDERS:
        print(f"  {name:40} {rate(costs[name]):12,.0f} rows/s")
    print(f"  to_pandas / naive loop         {to_pandas / naive:6.2f}x   (goal >= {NAIVE_GOAL:g})")
    print(f"  to_pandas / parse limit        {to_pandas / limit:6.2f}x   (goal >= {LIMIT_GOAL:g})")
    print(f"\nwhere a read's time goes, per page of {PAGE_ROWS} rows ({os.cpu_count()} cores; "
          f"wall: best of {args.repeat}, CPU: their mean):")  # fmt: skip
    print(f"  {'':40} {'wall':>7} {'CPU, client':>12} {'CPU, server':>12}   ms a page")
    for name, cost in costs.items():
        print(f"  {name:40} {cost.wall:7.2f} {cost.client_cpu:12.2f} {cost.server_cpu:12.2f}")
    print_floor(costs)
    print_encoding_costs(encodings, costs)
    mib = 2**20
    print("\nmemory (peak RSS growth, fresh subprocess per case):")
    for read_rows, measured in pandas_memory.items():
        peak, frame = measured["peak_growth"], measured["frame_bytes"]
        goal = f"   (goal <= {MEMORY_GOAL:g})" if read_rows == MEMORY_GOAL_ROWS else ""
        print(f"  to_pandas {read_rows // 1000}k: peak {peak / mib:7.1f} MiB, "
              f"frame {frame / mib:.1f} MiB, ratio {peak / frame:.2f}{goal}")  # fmt: skip
    small, large = parquet_small["peak_growth"], parquet_large["peak_growth"]
    print(f"  to_parquet 100k: {small / mib:7.1f} MiB")
    print(f"  to_parquet 1M:   {large / mib:7.1f} MiB   (goal <= 150 MiB), "
          f"1M / 100k {large / small:.2f}   (goal <= 1.25)")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4]) if sys.argv[4:] else 0.0)
    elif len(sys.argv) > 1 and sys.argv[1] == "memory":
        print(json.dumps(memory_case(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        main()
