"""A live table that follows a writer through cut connections and a restarted service ends
equal to a read of its view: rows, values and dtypes.

A writer (its own client, straight to the service) makes random inserts, updates and deletes,
bulk updates beyond 100 rows (which send events for 100 rows only) and committed
transactions, while a live table follows the view through a proxy that the test cuts at
random (`CuttingProxy.hold`, then `release` a few writes later). Half-way the service stops
and starts again on the same data directory and port. Then the live table must catch up
(a bounded wait on its frame), by realtime with a signed-in user and by polling with an API
key, for several seeds."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

import frameport as fp
from cutting_proxy import CuttingProxy
from frameport.local import LocalService
from tables_support import new_id

WAIT = 30.0
"""Seconds the live table gets to catch up once the writer stops."""

WRITES = 24
"""Writes per run (the service restarts after half of them)."""

KEY = "live-writer-key"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "service"


def restarted(service: LocalService, data_dir: Path) -> LocalService:
    """`service` stopped, and a service started again on its data directory and port."""
    port = int(service.endpoint.rsplit(":", 1)[1].split("/", 1)[0])
    service.stop()
    return LocalService(data_dir=data_dir, port=port, key=KEY, project=service.project).start()


def write_at_random(table: fp.Table, writer: fp.Client, rng: random.Random, number: int) -> None:
    """One random write to `table`: an insert, an update, a delete, a bulk update of every
    row (beyond 100 rows) or a committed transaction of three single-row writes."""
    ids = table.to_pandas()["$id"].tolist()
    kind = rng.choice(["insert", "update", "delete", "bulk", "transaction"])

    def row(row_id: str) -> pd.DataFrame:
        return pd.DataFrame({"$id": [row_id], "name": [f"n{number}"], "age": [rng.randrange(100)]})

    if kind == "insert":
        table.insert(pd.concat([row(f"w{number}-{i}") for i in range(rng.randint(1, 3))]))
    elif kind == "update":
        table.upsert(row(rng.choice(ids)))
    elif kind == "delete":
        table.where(fp.col("$id") == rng.choice(ids)).delete()
    elif kind == "bulk":
        table.where(fp.col("age") >= 0).update({"name": f"bulk{number}"})
    else:
        with writer.transaction() as tx:
            staged = tx.table(table.database_id, table.id)
            staged.insert(row(f"t{number}"))
            staged.upsert(row(rng.choice(ids)))
            staged.where(fp.col("$id") == rng.choice(ids)).delete()


def follow_a_writer(
    data_dir: Path, seed: int, live_client: Callable[[LocalService, str], fp.Client]
) -> None:
    rng = random.Random(seed)
    service = LocalService(data_dir=data_dir, key=KEY).start()
    try:
        with (
            service.client() as writer,
            CuttingProxy(service.endpoint, cut_after=0, cuts=0) as proxy,
        ):
            table = writer.create_table(
                new_id("live"),
                "people",
                schema={"name": "string(20)", "age": "integer"},
                permissions=['read("users")'],
            )
            first = pd.DataFrame(
                {
                    "$id": [f"r{i}" for i in range(140)],
                    "name": ["first"] * 140,
                    "age": [rng.randrange(100) for _ in range(140)],
                }
            )
            table.insert(first)
            with live_client(service, proxy.endpoint) as follower:
                view = follower.table(table.database_id, table.id).where(fp.col("age") < 70)
                with view.live(reconcile=1.0, heartbeat=2.0, poll=0.3) as live:
                    for number in range(WRITES):
                        if number == WRITES // 2:
                            proxy.hold()
                            service = restarted(service, data_dir)
                            proxy.release()
                        write_at_random(table, writer, rng, number)
                        if rng.random() < 0.3:
                            proxy.hold()
                        elif rng.random() < 0.5:
                            proxy.release()
                    proxy.release()
                    caught_up(live, sorted_frame(view.to_pandas()))
                    # Connected and caught up: a bulk update sends events for 100 rows only,
                    # the others come with the scheduled reconciliation.
                    table.where(fp.col("age") >= 0).update({"name": "last"})
                    caught_up(live, sorted_frame(view.to_pandas()))
                    assert live.status.catch_ups >= 1
    finally:
        service.stop()


def sorted_frame(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("$id").reset_index(drop=True)


def caught_up(live: fp.LiveTable, expected: pd.DataFrame) -> None:
    """Wait until the live frame equals `expected` (failing with their difference)."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            pd.testing.assert_frame_equal(sorted_frame(live.frame), expected)
            return
        except AssertionError as different:
            if time.monotonic() > deadline:
                held, wanted = set(live.frame["$id"]), set(expected["$id"])
                missing, extra = sorted(wanted - held), sorted(held - wanted)
                raise AssertionError(
                    f"missing {missing}, extra {extra}: {live.status}"
                ) from different
        time.sleep(0.05)


def signed_in(service: LocalService, endpoint: str) -> fp.Client:
    """A client of `endpoint` signed in as a new user of `service`."""
    email, password = f"{fp.ID.unique()}@example.org", "a long passphrase"
    with service.client() as admin:
        admin._request(
            "POST", "/users", json={"userId": "unique()", "email": email, "password": password}
        )
    client = fp.Client(endpoint, service.project, retries=0)
    client.login(email, password)
    return client


def with_the_key(service: LocalService, endpoint: str) -> fp.Client:
    return fp.Client(endpoint, service.project, key=service.key, retries=0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_signed_in_live_table_follows_a_writer(data_dir: Path, seed: int) -> None:
    follow_a_writer(data_dir, seed, signed_in)


@pytest.mark.parametrize("seed", [4, 5])
def test_a_polling_live_table_follows_a_writer(data_dir: Path, seed: int) -> None:
    follow_a_writer(data_dir, seed, with_the_key)
