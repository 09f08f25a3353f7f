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
from writer_support import KEY, people, write_through_cuts

WAIT = 30.0
"""Seconds the live table gets to catch up once the writer stops."""


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "service"


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
            table = people(writer, rng)
            with live_client(service, proxy.endpoint) as follower:
                view = follower.table(table.database_id, table.id).where(fp.col("age") < 70)
                with view.live(reconcile=1.0, heartbeat=2.0, poll=0.3) as live:
                    service = write_through_cuts(table, writer, rng, proxy, service, data_dir)
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
