"""A SIGKILL of the service during a commit, then a restart: the transaction is wholly applied
(status `committed`) or not at all (status `failed`), never in between.

The service process ends (`os._exit`, like SIGKILL) at a named point of the commit through
the test hook `FRAMEPORT_LOCAL_CRASH_AT`, then starts again on the same data directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from served import ServedService, free_port, served

from frameport.local.service._crash_points import CRASH_EXIT_STATUS, ENVIRONMENT_VARIABLE

DB, TABLE = "crashdb", "accounts"
ROWS = f"/tablesdb/{DB}/tables/{TABLE}/rows"
BEFORE = {"alice": 100, "bob": 50, "carol": 10}


def setup_and_stage(client: httpx.Client) -> str:
    """Three rows, then a transaction that moves money, deletes a row and adds one."""
    client.post("/tablesdb", json={"databaseId": DB, "name": DB}).raise_for_status()
    columns = [{"key": "balance", "type": "integer", "required": True}]
    body = {"tableId": TABLE, "name": TABLE, "columns": columns}
    client.post(f"/tablesdb/{DB}/tables", json=body).raise_for_status()
    rows = [{"$id": name, "balance": balance} for name, balance in BEFORE.items()]
    client.post(ROWS, json={"rows": rows}).raise_for_status()
    transaction_id = str(client.post("/tablesdb/transactions", json={}).json()["$id"])
    where = {"databaseId": DB, "tableId": TABLE}
    operations: list[dict[str, Any]] = [
        {"action": "decrement", **where, "rowId": "alice", "data": {"column": "balance",
                                                                    "value": 30}},
        {"action": "increment", **where, "rowId": "bob", "data": {"column": "balance",
                                                                  "value": 30}},
        {"action": "update", **where, "rowId": "carol", "data": {"balance": 11}},
        {"action": "delete", **where, "rowId": "carol"},
        {"action": "create", **where, "rowId": "dave", "data": {"balance": 1}},
        {"action": "bulkCreate", **where, "data": [{"$id": f"e{i}", "balance": i}
                                                   for i in range(20)]},
    ]  # fmt: skip
    staged = client.post(f"/tablesdb/transactions/{transaction_id}/operations",
                         json={"operations": operations})  # fmt: skip
    staged.raise_for_status()
    return transaction_id


def balances(client: httpx.Client) -> dict[str, int]:
    listed = client.get(ROWS, params={"queries[]": '{"method":"limit","values":[100]}'})
    return {row["$id"]: row["balance"] for row in listed.json()["rows"]}


APPLIED = {"alice": 70, "bob": 80, "dave": 1, **{f"e{i}": i for i in range(20)}}


@pytest.mark.parametrize(
    ("point", "status", "rows"),
    [
        ("transaction.committing", "failed", BEFORE),
        ("transaction.applying", "failed", BEFORE),
        ("transaction.committed", "committed", APPLIED),
    ],
)
def test_a_commit_killed_at_any_point_is_all_or_nothing(
    tmp_path: Path, point: str, status: str, rows: dict[str, int]
) -> None:
    data_dir, port = tmp_path / "service", free_port()
    doomed: ServedService
    with served(data_dir, env={ENVIRONMENT_VARIABLE: point}, port=port) as doomed:
        with doomed.client() as client:
            transaction_id = setup_and_stage(client)
            with pytest.raises(httpx.TransportError):
                client.patch(f"/tablesdb/transactions/{transaction_id}", json={"commit": True})
        assert doomed.wait_dead() == CRASH_EXIT_STATUS
    with served(data_dir, port=port) as restarted, restarted.client() as client:
        found = client.get(f"/tablesdb/transactions/{transaction_id}").json()
        assert found["status"] == status
        assert balances(client) == rows
        again = client.patch(f"/tablesdb/transactions/{transaction_id}", json={"commit": True})
        assert again.status_code == 400 and again.json()["type"] == "transaction_not_ready"
        retry = client.post("/tablesdb/transactions", json={}).json()["$id"]
        client.post(ROWS, json={"rowId": "after", "data": {"balance": 5},
                                "transactionId": retry}).raise_for_status()  # fmt: skip
        committed = client.patch(f"/tablesdb/transactions/{retry}", json={"commit": True})
        assert committed.json()["status"] == "committed"
        assert balances(client) == {**rows, "after": 5}
