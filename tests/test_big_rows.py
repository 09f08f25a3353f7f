"""Bulk update and delete answers list at most 100 rows beside the total of rows changed,
and frameport's reports count every row changed."""

from __future__ import annotations

import httpx
import pandas as pd

import frameport as fp
from frameport import Client
from frameport.local import LocalService
from tables_support import new_id

# --- bulk update and delete answers ------------------------------------------------------


def test_bulk_update_and_delete_answer_the_total_and_list_at_most_100_rows(
    service: LocalService, client: Client
) -> None:
    database = new_id("bulk")
    client.create_database(database)
    table = client.create_table(database, "many", schema={"n": "integer", "tag": "string(8)"})
    table.insert(pd.DataFrame({"n": range(250), "tag": "a"}), progress=False)
    rows = f"{service.endpoint}/tablesdb/{database}/tables/many/rows"
    headers = {"X-Service-Project": service.project, "X-Service-Key": service.key}
    with httpx.Client(headers=headers) as http:
        updated = http.patch(rows, json={"data": {"tag": "b"}, "queries": []})
        assert updated.status_code == 200, updated.text
        assert updated.json()["total"] == 250 and len(updated.json()["rows"]) == 100
        deleted = http.request("DELETE", rows, json={"queries": []})
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["total"] == 250 and len(deleted.json()["rows"]) == 100
    assert table.count() == 0


def test_update_and_delete_reports_count_every_row_past_the_first_100(client: Client) -> None:
    database = new_id("bulk")
    client.create_database(database)
    table = client.create_table(database, "many", schema={"n": "integer", "tag": "string(8)"})
    table.insert(pd.DataFrame({"n": range(250), "tag": "a"}), progress=False)
    updated = table.where(fp.col("n") >= 10).update({"tag": "b"})
    assert (updated.matched, updated.changed, updated.requests) == (240, 240, 1)
    assert table.where(fp.col("tag") == "b").count() == 240
    deleted = table.where(fp.col("n") >= 10).delete()
    assert (deleted.matched, deleted.changed, deleted.requests) == (240, 240, 1)
    assert table.count() == 10
