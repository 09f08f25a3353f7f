"""Realtime events over real WebSockets (service interface, "Realtime events"): the channels
and the event names of row and file writes in both interfaces, payloads, bulk writes, who may
receive an event, subscription queries, and no replay."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import httpx
import pytest
from callers import create_user, key_client
from realtime_helpers import connected, jwt_of, query, session_of
from storage_helpers import create_bucket, upload
from tablesdb_helpers import create_database, create_table, ok

from frameport.local import LocalService

COLUMNS = [
    {"key": "status", "type": "string", "size": 16, "required": False},
    {"key": "n", "type": "integer", "required": False},
    {"key": "score", "type": "double", "required": False},
]
PUBLIC = ['read("any")']


@pytest.fixture(scope="module")
def service() -> Iterator[LocalService]:
    with LocalService(rate_limits=False) as svc:
        yield svc


@pytest.fixture(scope="module")
def admin(service: LocalService) -> Iterator[httpx.Client]:
    with key_client(service) as client:
        create_database(client, "shop")
        create_database(client, "old", base="/databases")
        create_table(client, "shop", "orders", COLUMNS, permissions=PUBLIC)
        ok(
            client.post(
                "/databases/old/collections",
                json={"collectionId": "notes", "name": "notes", "attributes": COLUMNS,
                      "permissions": PUBLIC},
            ),
            201,
        )  # fmt: skip
        create_table(client, "shop", "members", COLUMNS, permissions=['read("users")'])
        create_table(
            client, "shop", "private", COLUMNS, permissions=['create("users")'], rowSecurity=True
        )
        for user in ("ann", "ben"):
            create_user(service, user)
        yield client


def rows(table: str, database: str = "shop") -> str:
    return f"/tablesdb/{database}/tables/{table}/rows"


def expected_names(
    families: Sequence[tuple[str, str, str]], ids: tuple[str, str, str], action: str
) -> set[str]:
    """Every combination of each ID and `*`, with the action on the row-level names."""
    names = set()
    for words in families:
        for depth in (3, 2, 1):
            for combination in itertools.product(*[(item, "*") for item in ids[:depth]]):
                path = ".".join(
                    f"{word}.{part}" for word, part in zip(words, combination, strict=False)
                )
                names.add(path)
                if depth == 3:
                    names.add(f"{path}.{action}")
    return names


def row_channels(database: str, table: str, row: str, action: str) -> list[str]:
    base = [
        "documents", f"databases.{database}.collections.{table}.documents",
        f"databases.{database}.collections.{table}.documents.{row}",
        "rows", f"databases.{database}.tables.{table}.rows",
        f"databases.{database}.tables.{table}.rows.{row}",
        f"tablesdb.{database}.tables.{table}.rows",
        f"tablesdb.{database}.tables.{table}.rows.{row}",
    ]  # fmt: skip
    return base + [f"{channel}.{action}" for channel in base]


TABLESDB = ("tablesdb", "tables", "rows")
TABLE = ("databases", "tables", "rows")
COLLECTION = ("databases", "collections", "documents")


# --- channels and names --------------------------------------------------------------------


def test_a_tablesdb_row_write_carries_16_channels_and_64_names(
    service: LocalService, admin: httpx.Client
) -> None:
    with connected(service, [("channels[]", "rows")]) as (ws, _):
        created = ok(admin.post(rows("orders"), json={"rowId": "o1", "data": {"n": 1}}), 201)
        ok(admin.patch(f"{rows('orders')}/o1", json={"data": {"n": 2}}))
        ok(admin.put(f"{rows('orders')}/o1", json={"data": {"n": 3}}))
        admin.delete(f"{rows('orders')}/o1").raise_for_status()
        events = ws.events()
    assert [event["payload"]["n"] for event in events] == [1, 2, 3, 3]
    assert events[0]["payload"] == created
    for event, action in zip(events, ["create", "update", "upsert", "delete"], strict=True):
        names = event["events"]
        assert names[0] == f"tablesdb.shop.tables.orders.rows.o1.{action}"
        assert len(names) == len(set(names)) == 64
        families = (TABLESDB, TABLE, COLLECTION)
        assert set(names) == expected_names(families, ("shop", "orders", "o1"), action)
        assert event["channels"] == row_channels("shop", "orders", "o1", action)
        assert set(event) == {"events", "channels", "timestamp", "payload", "subscriptions"}


def test_a_legacy_database_gets_42_names_first_in_the_routes_own_terms(
    service: LocalService, admin: httpx.Client
) -> None:
    documents = "/databases/old/collections/notes/documents"
    with connected(service, [("channels[]", "documents")]) as (ws, _):
        created = ok(admin.post(documents, json={"documentId": "d1", "data": {"n": 1}}), 201)
        ok(admin.patch(rows("notes", "old") + "/d1", json={"data": {"n": 2}}))
        first, second = ws.events()
    assert first["payload"] == created and "$collectionId" in first["payload"]
    assert "$tableId" in second["payload"]
    for event, action, leading in (
        (first, "create", "databases.old.collections.notes.documents.d1.create"),
        (second, "update", "databases.old.tables.notes.rows.d1.update"),
    ):
        names = event["events"]
        assert names[0] == leading
        assert len(names) == len(set(names)) == 42
        assert set(names) == expected_names((TABLE, COLLECTION), ("old", "notes", "d1"), action)
        assert event["channels"] == row_channels("old", "notes", "d1", action)


def test_each_channel_of_a_row_event_reaches_its_subscribers(
    service: LocalService, admin: httpx.Client
) -> None:
    elsewhere = ["rows.update", "tablesdb.shop.tables.orders.rows.x", "files", "documents.delete"]
    listened = [*row_channels("shop", "orders", "c1", "create"), *elsewhere]
    with connected(service) as (ws, _):
        for position, channel in enumerate(listened):
            ws.subscribe(f"s{position}", [channel])
        ok(admin.post(rows("orders"), json={"rowId": "c1", "data": {"n": 0}}), 201)
        (event,) = ws.events()
    assert event["subscriptions"] == [f"s{position}" for position in range(16)]


# --- bulk writes -----------------------------------------------------------------------------


def test_bulk_writes_send_one_event_per_row_and_stop_at_100_for_update_and_delete(
    service: LocalService, admin: httpx.Client
) -> None:
    create_table(admin, "shop", "bulk", COLUMNS, permissions=PUBLIC)
    path = rows("bulk")
    with connected(service, [("channels[]", "tablesdb.shop.tables.bulk.rows")]) as (ws, _):
        for start in (0, 100):
            batch = [{"$id": f"b{i:03d}", "n": i} for i in range(start, start + 100)]
            ok(admin.post(path, json={"rows": batch}), 201)
        ok(admin.put(path, json={"rows": [{"$id": "b000", "n": -1}, {"$id": "x", "n": 0}]}))
        updated = ok(admin.patch(path, json={"data": {"status": "done"}}))
        deleted = ok(admin.request("DELETE", path, json={}))
        events = ws.events()
    names = [event["events"][0].rsplit(".", 2)[1:] for event in events]
    assert names[:200] == [[f"b{i:03d}", "create"] for i in range(200)]
    assert names[200:202] == [["b000", "upsert"], ["x", "upsert"]]
    assert updated["total"] == deleted["total"] == 201
    order = [row["$id"] for row in updated["rows"]]
    assert names[202:302] == [[row_id, "update"] for row_id in order[:100]]
    assert names[302:] == [[row_id, "delete"] for row_id in order[:100]]
    assert all(event["payload"]["status"] == "done" for event in events[202:])


def test_staged_writes_send_nothing_and_a_commit_one_event_per_single_row_operation(
    service: LocalService, admin: httpx.Client
) -> None:
    create_table(admin, "shop", "staged", COLUMNS, permissions=PUBLIC)
    path = rows("staged")
    ok(admin.post(path, json={"rows": [{"$id": "old", "n": 1}, {"$id": "gone", "n": 2}]}), 201)
    transactions = "/tablesdb/transactions"
    with connected(service, [("channels[]", "tablesdb.shop.tables.staged.rows")]) as (ws, _):
        tx = ok(admin.post(transactions, json={}), 201)["$id"]
        staged = {"transactionId": tx}
        ok(admin.post(path, json={"rowId": "new", "data": {"n": 3}, **staged}), 201)
        ok(admin.put(f"{path}/old", json={"data": {"n": 4}, **staged}), 201)
        ok(admin.patch(f"{path}/old/n/increment", json={"value": 10, **staged}))
        ok(admin.request("DELETE", f"{path}/gone", json=staged), 204)
        ok(admin.post(path, json={"rows": [{"$id": "bulk", "n": 5}], **staged}))
        assert ws.events() == [], "staged writes send no events"
        ok(admin.patch(f"{transactions}/{tx}", json={"commit": True}))
        events = ws.events()
    names = [event["events"][0].rsplit(".", 2)[1:] for event in events]
    assert names == [["new", "create"], ["old", "update"], ["old", "update"], ["gone", "delete"]]
    payloads = [event["payload"] for event in events]
    assert [payload.get("n") for payload in payloads] == [3, 4, 14, 2]
    assert all(payload["$collectionId"] == payload["$tableId"] == "staged" for payload in payloads)
    assert all("$databaseId" not in payload for payload in payloads)


# --- who may receive an event ----------------------------------------------------------------


def test_events_reach_only_connections_whose_roles_can_read_the_row(
    service: LocalService, admin: httpx.Client
) -> None:
    channel = [("channels[]", "rows")]
    ann = {"Cookie": f"a_session_{service.project}={session_of(service, 'ann')}"}
    ben_jwt = [("jwt", jwt_of(admin, "ben")), *channel]
    with (
        connected(service, channel) as (guest, _),
        connected(service, channel, ann) as (ann_ws, ann_info),
        connected(service, ben_jwt) as (ben_ws, ben_info),
    ):
        assert ann_info["user"]["$id"] == "ann" and ben_info["user"]["$id"] == "ben"
        ok(admin.post(rows("members"), json={"rowId": "m1", "data": {"n": 0}}), 201)
        for row_id, permissions in (
            ("p-ann", ['read("user:ann")']),
            ("p-both", ['read("user:ann")', 'read("user:ben")']),
            ("p-any", ['read("any")']),
        ):
            body = {"rowId": row_id, "data": {"n": 0}, "permissions": permissions}
            ok(admin.post(rows("private"), json=body), 201)
        # ann loses read access by this update: the event follows the row after the write
        body = {"data": {"n": 1}, "permissions": ['read("user:ben")']}
        ok(admin.patch(f"{rows('private')}/p-ann", json=body))
        seen = {
            name: [event["payload"]["$id"] for event in ws.events()]
            for name, ws in (("guest", guest), ("ann", ann_ws), ("ben", ben_ws))
        }
    assert seen == {
        "guest": ["p-any"],
        "ann": ["m1", "p-ann", "p-both", "p-any"],
        "ben": ["m1", "p-both", "p-any", "p-ann"],
    }


def test_an_api_key_alone_connects_as_a_guest(service: LocalService, admin: httpx.Client) -> None:
    key = {"X-Service-Key": service.key}
    with connected(service, [("channels[]", "rows")], key) as (ws, info):
        assert info["user"] is None
        ok(admin.post(rows("members"), json={"rowId": "m2", "data": {"n": 0}}), 201)
        ok(admin.post(rows("orders"), json={"rowId": "o2", "data": {"n": 0}}), 201)
        assert [event["payload"]["$id"] for event in ws.events()] == ["o2"]


# --- subscription queries --------------------------------------------------------------------


def test_subscription_queries_filter_events_and_are_ored_across_subscriptions(
    service: LocalService, admin: httpx.Client
) -> None:
    channel = ["tablesdb.shop.tables.orders.rows"]
    subscriptions = {
        "open": [query("equal", "status", ["open"])],
        "big": [query("greaterThan", "n", [10]), query("isNotNull", "status")],
        "either": [
            query("or", None, [{"method": "lessThan", "attribute": "n", "values": [0]},
                               {"method": "isNull", "attribute": "status", "values": []}])
        ],
        "not-open": [query("notEqual", "status", ["open"])],
        "all": [query("equal", "status", ["nothing"]), query("select", None, ["*"])],
        "float": [query("equal", "score", [2])],
    }  # fmt: skip
    written = {
        "q1": {"status": "open", "n": 1, "score": 2.0},
        "q2": {"status": "shut", "n": 11},
        "q3": {"n": -5},
        "q4": {"status": "open", "n": 50},
    }
    with connected(service) as (ws, _):
        for subscription_id, queries in subscriptions.items():
            ws.subscribe(subscription_id, channel, queries)
        for row_id, data in written.items():
            ok(admin.post(rows("orders"), json={"rowId": row_id, "data": data}), 201)
        matched = {event["payload"]["$id"]: event["subscriptions"] for event in ws.events()}
    assert matched == {
        "q1": ["open", "all"],
        "q2": ["big", "not-open", "all"],
        "q3": ["either", "not-open", "all"],
        "q4": ["open", "big", "all"],
    }


def test_url_slot_queries_make_one_subscription_per_slot(
    service: LocalService, admin: httpx.Client
) -> None:
    params = [
        ("channels[]", "rows"),
        ("channels[]", "tablesdb.shop.tables.orders.rows"),
        ("tablesdb.shop.tables.orders.rows[1][]", query("equal", "status", ["slot"])),
        ("tablesdb_shop_tables_orders_rows[2][]", query("greaterThan", "n", [100])),
        ("tablesdb_shop_tables_orders_rows[2][]", query("lessThan", "n", [200])),
    ]
    with connected(service, params) as (ws, info):
        slot0, slot1, slot2 = info["subscriptions"]
        ok(admin.post(rows("orders"), json={"rowId": "u1", "data": {"status": "slot"}}), 201)
        ok(admin.post(rows("orders"), json={"rowId": "u2", "data": {"n": 150}}), 201)
        ok(admin.post(rows("orders"), json={"rowId": "u3", "data": {"n": 250}}), 201)
        matched = {event["payload"]["$id"]: event["subscriptions"] for event in ws.events()}
    assert info["channels"] == ["rows", "tablesdb.shop.tables.orders.rows"]
    assert matched == {"u1": [slot0, slot1], "u2": [slot0, slot2], "u3": [slot0]}


# --- files -----------------------------------------------------------------------------------


def test_file_writes_send_events_with_6_channels_and_10_names(
    service: LocalService, admin: httpx.Client
) -> None:
    create_bucket(admin, "pics", permissions=PUBLIC)
    create_bucket(admin, "vault", permissions=['create("users")'], fileSecurity=True)
    files = "/storage/buckets/{}/files"
    ann = {"Cookie": f"a_session_{service.project}={session_of(service, 'ann')}"}
    with (
        connected(service, [("channels[]", "files")]) as (guest, _),
        connected(service, [("channels[]", "files")], ann) as (ann_ws, _),
    ):
        # two chunks: only the one that completes the file sends an event
        responses = upload(admin, "pics", b"a" * (5 * 1024 * 1024 + 10), file_id="f1")
        assert [response.status_code for response in responses] == [201, 201]
        ok(admin.put(f"{files.format('pics')}/f1", json={"name": "renamed.bin"}))
        admin.delete(f"{files.format('pics')}/f1").raise_for_status()
        secret = {"permissions[]": ['read("user:ann")']}
        upload(admin, "vault", b"x", file_id="v1", form=secret)
        guest_events, ann_events = guest.events(), ann_ws.events()
    assert [e["payload"]["$id"] for e in ann_events] == ["f1", "f1", "f1", "v1"]
    for ann_event, guest_event in zip(ann_events[:3], guest_events, strict=True):
        ann_event.pop("subscriptions"), guest_event.pop("subscriptions")
        assert ann_event == guest_event
    for event, action in zip(guest_events, ["create", "update", "delete"], strict=True):
        base = ["files", "buckets.pics.files", "buckets.pics.files.f1"]
        assert event["channels"] == base + [f"{channel}.{action}" for channel in base]
        names = event["events"]
        assert names[0] == f"buckets.pics.files.f1.{action}"
        pairs = itertools.product(["pics", "*"], ["f1", "*"])
        combos = [f"buckets.{bucket}.files.{file}" for bucket, file in pairs]
        assert sorted(names) == sorted(
            [f"{name}.{action}" for name in combos] + combos + ["buckets.pics", "buckets.*"]
        )
    assert guest_events[0]["payload"]["chunksUploaded"] == 2
    assert guest_events[1]["payload"]["name"] == "renamed.bin"


# --- no replay -------------------------------------------------------------------------------


def test_events_published_while_disconnected_are_lost(
    service: LocalService, admin: httpx.Client
) -> None:
    params = [("channels[]", "tablesdb.shop.tables.orders.rows")]
    with connected(service, params) as (ws, _):
        ok(admin.post(rows("orders"), json={"rowId": "before", "data": {"n": 0}}), 201)
        assert [event["payload"]["$id"] for event in ws.events()] == ["before"]
    ok(admin.post(rows("orders"), json={"rowId": "missed", "data": {"n": 0}}), 201)
    with connected(service, params) as (ws, _):
        ok(admin.post(rows("orders"), json={"rowId": "after", "data": {"n": 0}}), 201)
        assert [event["payload"]["$id"] for event in ws.events()] == ["after"]
