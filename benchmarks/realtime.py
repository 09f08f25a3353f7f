"""Realtime fan-out: how late and how complete a write's event reaches 100 subscribers.

Starts the local service in its own process (so its CPU time can be read; SQLite with
`synchronous=NORMAL`, so that the disk's flushes do not set the pace of the writes), makes a
table, then runs the same writer twice: 200 single-row creates a second with the API key,
for `--seconds` seconds, sent by `WRITERS` tasks on keep-alive connections of their own.

  (a) baseline  no realtime connection open: the write's own round trip and the service's
                CPU time per write
  (b) fan-out   100 connections, each subscribed (by a `subscribe` message, as the web SDK
                does) to the table's rows channel

and prints, for (b), the write-to-receipt latency (from sending the write to a connection
reading its event) at p50 and p99, also as ratios to the write's own round trip in (a); the
events lost (expected: writes × 100, counted after a ping/pong barrier on every
connection; goal 0); and the service's CPU time per event delivered, beyond (a)'s per write.

    .venv/bin/python benchmarks/realtime.py [--seconds 10] [--connections 100] [--rate 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
from websockets.asyncio.client import ClientConnection, connect

from support.served import free_port

KEY = "standard_" + "1" * 64
PROJECT = "bench"
DB, TABLE = "live", "ticks"
CHANNEL = f"tablesdb.{DB}.tables.{TABLE}.rows"
_ID_MARK = '"payload":{"$id":"'
#: Writers sending the creates, each on a keep-alive connection of its own (a pool with
#: requests queued in it rescans its connections for each, which made the writing side the
#: bottleneck: its event loop fell behind both the writes and the events).
WRITERS = 16


@dataclass
class Listener:
    """One realtime connection and when it read each row's event."""

    connection: ClientConnection
    received: dict[str, float] = field(default_factory=dict)
    pong: asyncio.Event = field(default_factory=asyncio.Event)

    async def read(self) -> None:
        async for frame in self.connection:
            now = time.perf_counter()
            text = frame if isinstance(frame, str) else frame.decode()
            start = text.find(_ID_MARK)
            if start >= 0:
                start += len(_ID_MARK)
                self.received[text[start : text.index('"', start)]] = now
            elif text == '{"type":"pong"}':
                self.pong.set()


_SERVE = """
import sys
from pathlib import Path
from frameport.local._server import ServiceConfig, serve
data, project, key, port = sys.argv[1:]
config = ServiceConfig(
    Path(data), project=project, key=key, rate_limits=False, sqlite_synchronous="NORMAL"
)
serve(config, "127.0.0.1", int(port))
"""


def start_service(data: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-c", _SERVE, str(data), PROJECT, KEY, str(port)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_ready(endpoint: str, headers: dict[str, str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{endpoint}/tablesdb", headers=headers).raise_for_status()
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError("frameport serve did not answer within 60 s")


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


async def write_steadily(
    client: httpx.AsyncClient, prefix: str, rate: float, seconds: float
) -> tuple[dict[str, float], list[float]]:
    """Creates at `rate` a second; when each was due, and each one's round trip from then.

    `WRITERS` tasks send them, one request at a time each: a write due while all of them are
    busy waits for one, and its wait counts in its round trip and in its event's latency."""
    sent: dict[str, float] = {}
    round_trips: list[float] = []
    path = f"/tablesdb/{DB}/tables/{TABLE}/rows"
    due: asyncio.Queue[str | None] = asyncio.Queue()

    async def writer() -> None:
        while (row_id := await due.get()) is not None:
            body = {"rowId": row_id, "data": {"n": len(round_trips), "note": "tick"}}
            response = await client.post(path, json=body)
            response.raise_for_status()
            round_trips.append(time.perf_counter() - sent[row_id])

    writers = [asyncio.create_task(writer()) for _ in range(WRITERS)]
    begin = time.perf_counter()
    for index in range(int(rate * seconds)):
        await asyncio.sleep(max(0.0, begin + index / rate - time.perf_counter()))
        row_id = f"{prefix}{index:06d}"
        sent[row_id] = time.perf_counter()
        due.put_nowait(row_id)
    for _ in writers:
        due.put_nowait(None)
    await asyncio.gather(*writers)
    return sent, round_trips


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def run(endpoint: str, process: psutil.Process, args: argparse.Namespace) -> None:
    headers = {"X-Service-Project": PROJECT, "X-Service-Key": KEY}
    limits = httpx.Limits(max_connections=WRITERS)
    async with httpx.AsyncClient(base_url=endpoint, headers=headers, limits=limits) as client:
        before = cpu_seconds(process)
        _, baseline_trips = await write_steadily(client, "a", args.rate, args.seconds)
        baseline_cpu = (cpu_seconds(process) - before) / len(baseline_trips)

        url = endpoint.replace("http://", "ws://", 1) + f"/realtime?project={PROJECT}"
        listeners = []
        for index in range(args.connections):
            connection = await connect(url, max_size=2**24, compression=None)
            await connection.recv()  # connected
            item = {"subscriptionId": f"s{index}", "channels": [CHANNEL]}
            await connection.send(json.dumps({"type": "subscribe", "data": [item]}))
            await connection.recv()  # the subscribe response
            listeners.append(Listener(connection))
        readers = [asyncio.create_task(listener.read()) for listener in listeners]

        before = cpu_seconds(process)
        sent, trips = await write_steadily(client, "b", args.rate, args.seconds)
        for listener in listeners:
            await listener.connection.send('{"type":"ping"}')
        await asyncio.gather(*(listener.pong.wait() for listener in listeners))
        fanout_cpu = cpu_seconds(process) - before

        for listener in listeners:
            await listener.connection.close()
        await asyncio.gather(*readers, return_exceptions=True)

    latencies = [
        received - sent[row_id]
        for listener in listeners
        for row_id, received in listener.received.items()
        if row_id in sent
    ]
    expected = len(sent) * len(listeners)
    lost = expected - len(latencies)
    write_p50 = statistics.median(baseline_trips)
    p50, p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
    extra_cpu = fanout_cpu - baseline_cpu * len(sent)
    print(f"(a) baseline  {len(baseline_trips):>6,} writes at {args.rate:g}/s, no listeners: "
          f"write round trip p50 {write_p50 * 1e3:.2f} ms, "
          f"p99 {percentile(baseline_trips, 0.99) * 1e3:.2f} ms; "
          f"service CPU {baseline_cpu * 1e3:.2f} ms a write")  # fmt: skip
    print(
        f"(b) fan-out   {len(sent):>6,} writes x {len(listeners)} connections = "
        f"{expected:,} events; write round trip p50 {statistics.median(trips) * 1e3:.2f} ms"
    )
    print(f"    write-to-receipt p50 {p50 * 1e3:.2f} ms ({p50 / write_p50:.1f}x the baseline "
          f"write), p99 {p99 * 1e3:.2f} ms ({p99 / write_p50:.1f}x)")  # fmt: skip
    print(
        f"    service CPU {fanout_cpu / len(sent) * 1e3:.2f} ms a write "
        f"({fanout_cpu / len(sent) / baseline_cpu:.1f}x the baseline), "
        f"{extra_cpu / expected * 1e6:.1f} µs an event delivered beyond the write"
    )
    print(f"lost events: {lost:,} of {expected:,} (goal 0: {'met' if lost == 0 else 'NOT met'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--rate", type=float, default=200.0)
    args = parser.parse_args()
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryDirectory(prefix="frameport-realtime-") as data:
        service = start_service(Path(data), port)
        try:
            headers = {"X-Service-Project": PROJECT, "X-Service-Key": KEY}
            wait_ready(endpoint, headers)
            columns = [
                {"key": "n", "type": "integer", "required": False},
                {"key": "note", "type": "string", "size": 32, "required": False},
            ]
            with httpx.Client(base_url=endpoint, headers=headers) as client:
                client.post("/tablesdb", json={"databaseId": DB, "name": DB}).raise_for_status()
                table = {"tableId": TABLE, "name": TABLE, "columns": columns,
                         "permissions": ['read("any")']}  # fmt: skip
                client.post(f"/tablesdb/{DB}/tables", json=table).raise_for_status()
            asyncio.run(run(endpoint, psutil.Process(service.pid), args))
        finally:
            service.send_signal(signal.SIGINT if os.name != "nt" else signal.SIGTERM)
            service.wait(timeout=30)


if __name__ == "__main__":
    main()
