"""Live tables: how soon a write reaches a live frame, and what a catch-up costs.

Starts `frameport serve` in its own process, makes a table of `--rows` rows that signed-in
users may read, and follows it with `live()` as a signed-in user (realtime):

  (a) write to frame  `--rate` single-row creates a second for `--seconds` seconds, sent
                      with the API key; for each, the time from sending it to the live
                      table applying it (an `on_change` callback): p50 and p99 (goal: p99
                      <= 100 ms), and the writes never applied
  (b) catch-up        the live table's connections cut (through the tests' cutting proxy)
                      for `--outage` seconds while `--share` (1 %) of the rows change, as
                      a writer changes them: 60 % of the changes updates of random rows,
                      20 % inserts, 20 % deletes of random rows (spread), then again with
                      the deletes purging the oldest rows, and without deletes (80 %
                      updates); from its socket opening again to
                      its frame holding the changes, against a full read of the table
                      (`to_arrow`) by the same user (goal: <= 5 %), with the catch-up's
                      breakdown (its debug log); then what the service alone takes to
                      answer a count, a page of `$id`s and the changed rows (the floor)
  (c) reconciliation  an idle live table reconciling every `--reconcile` seconds: its
                      catch-ups, HTTP requests and CPU time (client and service) per minute

    .venv/bin/python benchmarks/live.py [--rows 200000] [--rate 200] [--seconds 10]
                                        [--outage 10] [--share 0.01] [--reconcile 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import psutil
import pyarrow as pa

import frameport as fp
from frameport._tables.changes import DEFAULT_HEARTBEAT, DEFAULT_LAG
from support.served import KEY, PROJECT, headers, service_process

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from cutting_proxy import CuttingProxy  # the tests' proxy, reused

DB, TABLE = "live", "ticks"
EMAIL, PASSWORD = "follower@example.org", "a long passphrase"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def prepare(endpoint: str, rows: int) -> None:
    """The table of `rows` rows, and the user that follows it."""
    with fp.Client(endpoint, PROJECT, key=KEY) as client:
        table = client.create_table(
            DB, TABLE, schema={"n": "integer", "note": "string(20)"}, permissions=['read("users")']
        )
        frame = pd.DataFrame({"$id": [f"r{i:07d}" for i in range(rows)], "n": range(rows)})
        table.insert(frame.assign(note="first"), progress=False)
    user = {"userId": "follower", "email": EMAIL, "password": PASSWORD}
    httpx.post(f"{endpoint}/users", json=user, headers=headers()).raise_for_status()


async def writes_to_frame(endpoint: str, rate: float, seconds: float) -> None:
    async with fp.AsyncClient(endpoint, PROJECT) as follower:
        await follower.login(EMAIL, PASSWORD)
        applied: dict[str, float] = {}

        since_stamp: list[float] = []  # from the service's $updatedAt to applied

        def note(batch: pa.RecordBatch) -> None:
            now, wall = time.perf_counter(), time.time()
            for row_id in batch.column("$id").to_pylist():
                applied.setdefault(str(row_id), now)
            stamps = batch.column("$updatedAt").cast(pa.int64()).to_pylist()
            since_stamp.extend(wall - stamp / 1000 for stamp in stamps if stamp is not None)

        async with await follower.table(DB, TABLE).live(reconcile=None) as live:
            live.on_change(note)
            sent: dict[str, float] = {}
            trips: list[float] = []
            path = f"/tablesdb/{DB}/tables/{TABLE}/rows"
            limits = httpx.Limits(max_connections=64)
            async with httpx.AsyncClient(
                base_url=endpoint, headers=headers(), limits=limits
            ) as writer:

                async def write(row_id: str) -> None:
                    sent[row_id] = time.perf_counter()
                    body = {"rowId": row_id, "data": {"n": len(sent), "note": "tick"}}
                    (await writer.post(path, json=body)).raise_for_status()
                    trips.append(time.perf_counter() - sent[row_id])

                tasks, begin = [], time.perf_counter()
                for index in range(int(rate * seconds)):
                    await asyncio.sleep(max(0.0, begin + index / rate - time.perf_counter()))
                    tasks.append(asyncio.create_task(write(f"w{index:07d}")))
                await asyncio.gather(*tasks)
            deadline = time.monotonic() + 10
            while not sent.keys() <= applied.keys() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
    latencies = [applied[row_id] - at for row_id, at in sent.items() if row_id in applied]
    lost = len(sent) - len(latencies)
    p99 = percentile(latencies, 0.99)
    print(
        f"(a) write to frame  {len(sent):,} writes at {rate:g}/s into a "
        f"{len(live) - len(sent):,}-row live table: "
        f"p50 {percentile(latencies, 0.5) * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms "
        f"(goal <= 100 ms: {'met' if p99 <= 0.1 else 'NOT met'}); never applied: {lost}"
    )
    print(
        f"                    the writes' own round trips: p50 {percentile(trips, 0.5) * 1e3:.1f}"
        f" ms, p99 {percentile(trips, 0.99) * 1e3:.1f} ms; from the service's $updatedAt to "
        f"applied: p50 {percentile(since_stamp, 0.5) * 1e3:.1f} ms, "
        f"p99 {percentile(since_stamp, 0.99) * 1e3:.1f} ms"
    )


class CatchUpLog(logging.Handler):
    """The breakdown the live table logs for each catch-up (at debug level)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.figures: list[tuple[Any, ...]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("catch-up of") and isinstance(record.args, tuple):
            self.figures.append(record.args[1:])


async def catch_up(endpoint: str, outage: float, share: float, deletes: str, seed: int) -> None:
    """A 1 % change while the live table is cut off: 60 % of it updates of random rows, 20 %
    inserts and 20 % deletes, of random rows (`deletes="spread"`, as a writer deletes) or of
    the oldest rows (`"oldest"`, a purge); or, with `"none"`, 80 % updates and 20 % inserts."""
    rng = np.random.default_rng(seed)
    logged = CatchUpLog()
    logger = logging.getLogger("frameport.changes")
    logger.addHandler(logged)
    logger.setLevel(logging.DEBUG)
    with CuttingProxy(endpoint, cut_after=0, cuts=0) as proxy:
        async with (
            fp.AsyncClient(proxy.endpoint, PROJECT, retries=0) as follower,
            fp.AsyncClient(endpoint, PROJECT, key=KEY) as writer,
        ):
            await follower.login(EMAIL, PASSWORD)
            view = follower.table(DB, TABLE)
            started = time.perf_counter()
            await view.to_arrow(progress=False)
            full_read = time.perf_counter() - started

            live = await view.live(reconcile=None, heartbeat=2.0)
            async with live:
                # The table's rows older than the catch-up's reach (the watermark, confirmed
                # by a heartbeat, less the lag), as a table followed for a while has them.
                await asyncio.sleep(DEFAULT_LAG + 3.0)
                ids = np.sort(np.array(live.frame["$id"]))
                count = int(len(ids) * share)
                removed = count // 5
                if deletes == "none":
                    deleted = ids[:0]
                elif deletes == "oldest":
                    deleted = ids[:removed]
                else:
                    deleted = rng.choice(ids, removed, False)
                rest = np.setdiff1d(ids, deleted)
                updated = rng.choice(rest, count - removed - len(deleted), replace=False)
                catch_ups, cut_at = live.status.catch_ups, time.monotonic()
                proxy.hold()
                table = writer.table(DB, TABLE)
                changes = pd.DataFrame({"$id": updated, "note": "changed"})
                await table.upsert(changes, progress=False)
                if len(deleted):
                    await table.where(fp.col("$id").isin(list(deleted))).delete(progress=False)
                names = [f"x{seed}-{i:07d}" for i in range(removed)]
                new = pd.DataFrame({"$id": names, "n": 0})
                await table.insert(new.assign(note="new"), progress=False)
                expected = len(live) + removed - len(deleted)
                await asyncio.sleep(max(0.0, cut_at + outage - time.monotonic()))
                logged.figures.clear()
                proxy.release()
                while not live.status.connected:
                    await asyncio.sleep(0.001)
                opened = time.perf_counter()
                while live.status.catch_ups == catch_ups or len(live) != expected:
                    await asyncio.sleep(0.001)
                took = time.perf_counter() - opened
                notes = live.frame.set_index("$id")["note"]
                assert (notes[updated] == "changed").all() and names[0] in notes.index
                assert not notes.index.isin(deleted).any()
    logger.removeHandler(logged)
    ratio = took / full_read
    changed_rows, changed_ms, gone, requests, listed, gone_ms = logged.figures[-1]
    print(
        f"(b) catch-up        {count:,} rows of {len(ids):,} changed ({len(updated):,} updated, "
        f"{removed:,} inserted, {len(deleted):,} deleted: {deletes}) during a {outage:g}-second "
        f"cut: {took * 1e3:.0f} ms from the socket opening again to the frame holding them; "
        f"a full read {full_read * 1e3:.0f} ms: {ratio:.1%} "
        f"(goal <= 5 %: {'met' if ratio <= 0.05 else 'NOT met'})"
    )
    print(
        f"                    the service's clock and the {changed_rows:,} changed rows read in "
        f"{changed_ms:.0f} ms ({changed_ms / 1e3 / full_read:.1%} of the full read); "
        f"{gone:,} gone rows found with {requests:,} requests listing {listed:,} rows "
        f"in {gone_ms:.0f} ms"
    )


def service_floor(endpoint: str, rows: int) -> None:
    """What the service takes to answer the requests a catch-up is made of, one at a time
    with the API key: a count of a range, a page of 5,000 rows' ``$id``s, and the rows
    updated in the last minute."""
    path = f"{endpoint}/tablesdb/{DB}/tables/{TABLE}/rows"
    since = (pd.Timestamp.now(tz="UTC") - pd.Timedelta(minutes=1)).isoformat(
        timespec="milliseconds"
    )

    def query(method: str, column: str | None, values: list[object]) -> str:
        return json.dumps({"method": method, "column": column, "values": values})

    def timed(queries: list[str]) -> tuple[float, int]:
        took = []
        for _ in range(5):
            started = time.perf_counter()
            answer = http.get(path, params={"queries[]": queries})
            took.append(time.perf_counter() - started)
            answer.raise_for_status()
        return sorted(took)[2], len(answer.json()["rows"])

    with httpx.Client(headers=headers()) as http:
        ids = [query("select", None, ["$id"])]
        within = [
            query("greaterThan", "$sequence", [0]),
            query("lessThanEqual", "$sequence", [5000]),
        ]
        count, _ = timed([*within, *ids, query("limit", None, [1])])
        page, listed = timed([*within, *ids, query("limit", None, [5000])])
        recent = [query("greaterThanEqual", "$updatedAt", [since]), query("limit", None, [5000])]
        changed, read = timed(recent)
    print(
        f"                    the service alone (one request at a time, median of 5): a count "
        f"of 5,000 rows {count * 1e3:.1f} ms, a page of {listed:,} rows' $ids "
        f"{page * 1e3:.1f} ms ({rows // 5000} such pages: {rows // 5000 * page * 1e3:.0f} ms), "
        f"the {read:,} rows updated in the last minute {changed * 1e3:.1f} ms"
    )


async def reconciliation(endpoint: str, service: psutil.Process, every: float) -> None:
    """An idle live table reconciling every `every` seconds: the client's CPU time (this
    process: no proxy here), the service's, and the HTTP requests the client sends (every
    ``httpx.AsyncClient.send``), over two reconciliations (from half a period after it
    started), per minute."""
    sent = 0
    send = httpx.AsyncClient.send

    async def counted(self: httpx.AsyncClient, request: httpx.Request, **options: Any) -> Any:
        nonlocal sent
        sent += 1
        return await send(self, request, **options)

    httpx.AsyncClient.send = counted  # type: ignore[method-assign]
    try:
        async with fp.AsyncClient(endpoint, PROJECT) as follower:
            await follower.login(EMAIL, PASSWORD)
            async with await follower.table(DB, TABLE).live(reconcile=every) as live:
                await asyncio.sleep(every / 2)
                catch_ups, requests = live.status.catch_ups, sent
                client, served = time.process_time(), sum(service.cpu_times()[:2])
                await asyncio.sleep(2 * every)
                client = time.process_time() - client
                served = sum(service.cpu_times()[:2]) - served
                requests, catch_ups = sent - requests, live.status.catch_ups - catch_ups
    finally:
        httpx.AsyncClient.send = send  # type: ignore[method-assign]
    minutes = 2 * every / 60
    print(
        f"(c) reconciliation  an idle {len(live):,}-row live table reconciling every {every:g} s "
        f"(a heartbeat every {DEFAULT_HEARTBEAT:g} s): {catch_ups / minutes:.1f} catch-ups, "
        f"{requests / minutes:.1f} requests, client CPU {client / minutes * 1e3:.0f} ms and "
        f"service CPU {served / minutes * 1e3:.0f} ms per minute"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--outage", type=float, default=10.0)
    parser.add_argument("--share", type=float, default=0.01)
    parser.add_argument("--reconcile", type=float, default=60.0, help="seconds, in (c)")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="frameport-live-") as data,
        service_process(Path(data)) as (endpoint, service),
    ):
        started = time.perf_counter()
        prepare(endpoint, args.rows)
        print(f"    a {args.rows:,}-row table made in {time.perf_counter() - started:.0f} s")
        asyncio.run(writes_to_frame(endpoint, args.rate, args.seconds))
        for seed, deletes in enumerate(("spread", "oldest", "none")):
            asyncio.run(catch_up(endpoint, args.outage, args.share, deletes, seed))
        service_floor(endpoint, args.rows)
        asyncio.run(reconciliation(endpoint, psutil.Process(service.pid), args.reconcile))


if __name__ == "__main__":
    main()
