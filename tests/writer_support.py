"""A writer for the follow tests (a live table, `sync(follow=True)`): random inserts, updates,
deletes, bulk updates beyond 100 rows (which send events for 100 rows only) and committed
transactions, made straight to the service while the test's `CuttingProxy`, which the
follower goes through, cuts connections at random; half-way the service stops and starts
again on the same data directory and port."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

import frameport as fp
from cutting_proxy import CuttingProxy
from frameport.local import LocalService
from tables_support import new_id

WRITES = 24
"""Writes per run (the service restarts after half of them)."""

KEY = "live-writer-key"
"""The API key of the services the writer writes to (the same after a restart)."""


def restarted(service: LocalService, data_dir: Path) -> LocalService:
    """`service` stopped, and a service started again on its data directory and port."""
    port = int(service.endpoint.rsplit(":", 1)[1].split("/", 1)[0])
    service.stop()
    return LocalService(data_dir=data_dir, port=port, key=KEY, project=service.project).start()


def people(writer: fp.Client, rng: random.Random) -> fp.Table:
    """A new table of 140 people (``name``, ``age``) that signed-in users may read."""
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
    return table


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


def write_through_cuts(
    table: fp.Table,
    writer: fp.Client,
    rng: random.Random,
    proxy: CuttingProxy,
    service: LocalService,
    data_dir: Path,
) -> LocalService:
    """`WRITES` random writes to `table`; after a write the proxy is held (its connections
    cut) or released at random, and after half of them `service` restarts (the proxy held
    meanwhile). The proxy is released at the end; the service running then is returned."""
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
    return service
