"""`client.transaction()`: writes to several tables staged in one of the service's
transactions, committed when the block is left, rolled back by an exception, Ctrl-C or a
lost client (whose transaction expires by its time to live); the limits checked before a
request is sent."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pandas as pd
import pytest

import frameport as fp
from cutting_proxy import CuttingProxy
from frameport import AsyncClient, Client, Table
from frameport.local import LocalService
from tables_support import new_id

ORDERS = {"customer": "string(20)", "total": "float"}
LINES = {"order": "string(36)", "item": "string(20)", "n": "integer"}
STOCK = {"item": "string(20)", "left": "integer"}


def shop(client: Client, permissions: list[str] | None = None) -> tuple[Table, Table, Table]:
    """Orders and their lines in one database, the stock in another."""
    sales, store = new_id("sales"), new_id("store")
    orders = client.create_table(sales, "orders", schema=ORDERS, permissions=permissions)
    lines = client.create_table(sales, "lines", schema=LINES, permissions=permissions)
    stock = client.create_table(store, "stock", schema=STOCK, permissions=permissions)
    stock.insert(pd.DataFrame({"$id": ["pen", "ink"], "item": ["pen", "ink"], "left": [10, 5]}))
    return orders, lines, stock


def contents(*tables: Table) -> list[pd.DataFrame]:
    return [table.sort("$id").to_pandas(progress=False) for table in tables]


def place_order(tx: fp.Transaction, orders: Table, lines: Table, stock: Table) -> str:
    """One order, its two lines and the stock they take, staged in `tx`."""
    [order] = tx.table(orders.database_id, orders.id).insert(
        pd.DataFrame({"customer": ["ada"], "total": [12.5]})
    )
    tx.table(lines.database_id, lines.id).load(
        pd.DataFrame({"order": [order, order], "item": ["pen", "ink"], "n": [2, 1]}),
        progress=False,
    )
    taken = tx.table(stock.database_id, stock.id)
    taken.where(fp.col("item") == "pen").update(set={"left": fp.decrement(by=2)})
    taken.where(fp.col("item") == "ink").update(set={"left": fp.decrement(by=1)})
    return order


@pytest.fixture
def tables(key_client: Client) -> Iterator[tuple[Table, Table, Table]]:
    yield shop(key_client)


def test_a_transaction_over_tables_of_two_databases_commits_them_all(
    key_client: Client, tables: tuple[Table, Table, Table]
) -> None:
    orders, lines, stock = tables
    with key_client.transaction() as tx:
        order = place_order(tx, orders, lines, stock)
        assert tx.operations == 4
        assert orders.count() == 0, "nothing is written before the block is left"
    assert orders.to_pandas()["$id"].tolist() == [order]
    assert lines.to_pandas()["order"].tolist() == [order, order]
    assert stock.sort("item").to_pandas()["left"].tolist() == [4, 8]


@pytest.mark.parametrize("interruption", [RuntimeError, KeyboardInterrupt])
def test_an_exception_or_ctrl_c_in_the_block_writes_nothing(
    key_client: Client, tables: tuple[Table, Table, Table], interruption: type[BaseException]
) -> None:
    before = contents(*tables)
    with pytest.raises(interruption), key_client.transaction() as tx:
        place_order(tx, *tables)
        raise interruption("stopped")
    for read, was in zip(contents(*tables), before, strict=True):
        pd.testing.assert_frame_equal(read, was)
    with pytest.raises(fp.TransactionError, match="rolled back"):
        tx.table(tables[0].database_id, tables[0].id).insert(pd.DataFrame({"customer": ["x"]}))


def test_the_async_face_commits_on_leaving_and_rolls_back_on_an_error(
    async_client: AsyncClient, key_client: Client, tables: tuple[Table, Table, Table]
) -> None:
    orders, lines, _ = tables

    async def run() -> None:
        async with async_client.transaction(ttl=120) as tx:
            await tx.table(orders.database_id, orders.id).insert(
                pd.DataFrame({"customer": ["eli"]})
            )
        with pytest.raises(ValueError, match="boom"):
            async with async_client.transaction() as tx:
                await tx.table(lines.database_id, lines.id).insert(pd.DataFrame({"item": ["pen"]}))
                raise ValueError("boom")

    asyncio.run(run())
    assert orders.to_pandas()["customer"].tolist() == ["eli"]
    assert lines.count() == 0


def test_the_operations_limit_is_checked_before_sending_and_says_how_to_split(
    key_client: Client, tables: tuple[Table, Table, Table]
) -> None:
    orders, _, stock = tables
    with pytest.raises(fp.TransactionError) as caught, key_client.transaction() as tx:
        pens = tx.table(stock.database_id, stock.id).where(fp.col("item") == "pen")
        for _ in range(100):
            pens.update(set={"left": fp.increment(by=1)})
        tx.table(orders.database_id, orders.id).insert(pd.DataFrame({"customer": ["bo"]}))
    error = caught.value
    assert error.limit == "operations"
    assert "100 operations" in str(error) and "split" in str(error)
    assert tx.operations == 100, "the refused write was not sent"
    assert stock.sort("item").to_pandas()["left"].tolist() == [5, 10]
    assert orders.count() == 0


def test_a_ttl_outside_the_service_range_is_refused_before_anything_is_sent(
    key_client: Client,
) -> None:
    with pytest.raises(fp.TransactionError, match="ttl") as caught:
        key_client.transaction(ttl=7200)
    assert caught.value.limit == "ttl"


def test_reads_through_a_transaction_table_name_what_to_do(
    key_client: Client, tables: tuple[Table, Table, Table]
) -> None:
    orders = tables[0]
    with key_client.transaction() as tx:
        staged = tx.table(orders.database_id, orders.id)
        with pytest.raises(AttributeError, match=r"client\.table"):
            staged.to_pandas()


def recorded_operations(key_client: Client, transaction: str | None) -> int:
    """The operations the service recorded for `transaction`."""
    return int(
        key_client._request_json("GET", f"/tablesdb/transactions/{transaction}")["operations"]
    )


def test_an_api_key_stages_bulk_operations(
    key_client: Client, tables: tuple[Table, Table, Table]
) -> None:
    orders, _, stock = tables
    with key_client.transaction() as tx:
        tx.table(orders.database_id, orders.id).insert(pd.DataFrame({"customer": ["a", "b", "c"]}))
        tx.table(stock.database_id, stock.id).where(fp.col("left") > 0).update(set={"left": 0})
    assert recorded_operations(key_client, tx.id) == 2, "one bulk operation a write"
    assert orders.count() == 3
    assert stock.to_pandas()["left"].tolist() == [0, 0]


# ---------------------------------------------------------------------------------------------
# A signed-in user (a session or a JWT, not an API key): the service takes bulk operations in
# a transaction only from API keys, so each row is an operation of its own.

USERS_WRITE = ['read("users")', 'create("users")', 'update("users")', 'delete("users")']


@pytest.fixture
def user_tables(key_client: Client) -> Iterator[tuple[Table, Table, Table]]:
    yield shop(key_client, permissions=USERS_WRITE)


@pytest.fixture(params=["session", "jwt"])
def signed_in(request: pytest.FixtureRequest, user_client: Client) -> Iterator[Client]:
    """A client signed in as a user, with a session or with a JWT."""
    if request.param == "session":
        yield user_client
        return
    with Client(user_client.endpoint, user_client.project, jwt=user_client.create_jwt()) as jwt:
        yield jwt


def test_a_signed_in_user_commits_a_transaction_over_two_tables(
    signed_in: Client, key_client: Client, user_tables: tuple[Table, Table, Table]
) -> None:
    orders, lines, stock = user_tables
    with signed_in.transaction() as tx:
        [order] = tx.table(orders.database_id, orders.id).insert(
            pd.DataFrame({"customer": ["ada"], "total": [12.5]})
        )
        tx.table(lines.database_id, lines.id).load(
            pd.DataFrame({"order": [order, order], "item": ["pen", "ink"], "n": [2, 1]}),
            progress=False,
        )
        in_stock = tx.table(stock.database_id, stock.id)
        in_stock.where(fp.col("item") == "pen").update(set={"left": fp.decrement(by=2)})
        in_stock.where(fp.col("item") == "ink").delete()
        assert tx.operations == 5, "one operation a row"
        assert orders.count() == 0, "nothing is written before the block is left"
    assert recorded_operations(key_client, tx.id) == 5
    assert orders.to_pandas()["$id"].tolist() == [order]
    assert lines.sort("item").to_pandas()["item"].tolist() == ["ink", "pen"]
    assert stock.to_pandas()[["item", "left"]].values.tolist() == [["pen", 8]]


def test_a_signed_in_users_transaction_rolls_back_on_an_exception(
    user_client: Client, user_tables: tuple[Table, Table, Table]
) -> None:
    before = contents(*user_tables)
    with pytest.raises(RuntimeError), user_client.transaction() as tx:
        place_order(tx, *user_tables)
        raise RuntimeError("stopped")
    for read, was in zip(contents(*user_tables), before, strict=True):
        pd.testing.assert_frame_equal(read, was)


def test_a_signed_in_users_rows_are_counted_one_an_operation_before_sending(
    user_client: Client, user_tables: tuple[Table, Table, Table]
) -> None:
    orders, _, stock = user_tables
    customers = pd.DataFrame({"customer": [f"c{n}" for n in range(99)]})
    with pytest.raises(fp.TransactionError) as too_many, user_client.transaction() as tx:
        tx.table(orders.database_id, orders.id).insert(customers)
        tx.table(stock.database_id, stock.id).where(fp.col("left") > 0).delete()
    message = str(too_many.value)
    assert too_many.value.limit == "operations"
    assert "99 are staged" in message and "needs 2 more" in message and "split" in message
    assert "API key" in message, "the message says why each row counts"
    assert tx.operations == 99, "the refused delete was not sent"
    with (
        pytest.raises(fp.TransactionError, match="101") as refused,
        user_client.transaction() as tx,
    ):
        tx.table(orders.database_id, orders.id).insert(pd.concat([customers] * 2).head(101))
    assert refused.value.limit == "operations"
    assert tx.id is None, "refused before anything was sent"
    assert orders.count() == 0 and stock.count() == 2


def test_a_signed_in_users_rows_get_the_permissions_the_service_gives_them(
    user_client: Client, user_tables: tuple[Table, Table, Table]
) -> None:
    orders = user_tables[0]
    user_id = user_client.account()["$id"]
    mine = [f'read("user:{user_id}")']
    rows = pd.DataFrame(
        {"$id": ["given", "none"], "customer": ["a", "b"], "$permissions": [mine, None]}
    )
    with user_client.transaction() as tx:
        tx.table(orders.database_id, orders.id).insert(rows)
    stored = orders.sort("$id").to_pandas(system=["id", "permissions"])
    assert [list(p) for p in stored["$permissions"]] == [mine, []]


def test_a_signed_in_users_atomic_load_runs_row_by_row(
    user_client: Client, user_tables: tuple[Table, Table, Table]
) -> None:
    orders = user_tables[0]
    mine = user_client.table(orders.database_id, orders.id)
    first = pd.DataFrame({"$id": ["a", "b", "c"], "customer": ["a", "b", "c"]})
    report = mine.load(first, atomic=True, progress=False)
    assert (report.written, report.batches) == (3, 3)
    again = first.assign(customer=["A", "B", "C"])
    report = mine.load(again, on_conflict="replace", atomic=True, progress=False)
    assert (report.replaced, report.batches) == (3, 3)
    assert orders.sort("$id").to_pandas()["customer"].tolist() == ["A", "B", "C"]
    with pytest.raises(fp.LoadError, match="101"):
        mine.load(pd.DataFrame({"customer": ["x"] * 101}), atomic=True, progress=False)
    assert orders.count() == 3


# ---------------------------------------------------------------------------------------------
# A lost client, and the time to live: a service of their own, whose clock the tests move.

CHILD = textwrap.dedent(
    """
    import sys
    import pandas as pd
    import frameport as fp

    client = fp.Client.from_env()
    with client.transaction(ttl=60) as tx:
        tx.table(sys.argv[1], "orders").insert(pd.DataFrame({"customer": ["ada"]}))
        tx.table(sys.argv[2], "stock").where(fp.col("item") == "pen").delete()
        print(tx.id, flush=True)
        sys.stdin.readline()  # killed here, inside the block
    """
)


@pytest.fixture
def own_service(tmp_path: object) -> Iterator[LocalService]:
    with LocalService() as service:
        yield service


def test_a_killed_client_writes_nothing_also_after_its_ttl(own_service: LocalService) -> None:
    with own_service.client() as client:
        orders, _, stock = shop(client)
        before = contents(orders, stock)
        environment = {
            **os.environ,
            "FRAMEPORT_ENDPOINT": own_service.endpoint,
            "FRAMEPORT_PROJECT": own_service.project,
            "FRAMEPORT_KEY": own_service.key,
        }
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, orders.database_id, stock.database_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
            text=True,
        )
        assert child.stdout is not None
        transaction = child.stdout.readline().strip()
        assert transaction, "the child staged its writes"
        child.kill()  # SIGKILL: no cleanup runs
        child.wait()
        path = f"/tablesdb/transactions/{transaction}"
        assert client._request_json("GET", path)["operations"] == 2
        for read, was in zip(contents(orders, stock), before, strict=True):
            pd.testing.assert_frame_equal(read, was)
        own_service.advance_clock(61)
        with pytest.raises(fp.APIError) as expired:
            client._request_json("PATCH", path, json={"commit": True})
        assert expired.value.type == "transaction_expired"
        for read, was in zip(contents(orders, stock), before, strict=True):
            pd.testing.assert_frame_equal(read, was)


def test_an_expired_transaction_is_refused_naming_its_ttl(own_service: LocalService) -> None:
    with own_service.client() as client:
        orders, _, _ = shop(client)
        staged = pd.DataFrame({"customer": ["ada"]})
        with pytest.raises(fp.TransactionError) as caught, client.transaction(ttl=60) as tx:
            tx.table(orders.database_id, orders.id).insert(staged)
            own_service.advance_clock(61)
            tx.table(orders.database_id, orders.id).insert(staged)
        assert caught.value.limit == "ttl"
        assert "ttl=60" in str(caught.value) and "split" in str(caught.value)
        assert orders.count() == 0


def test_a_lost_connection_in_the_block_writes_nothing(own_service: LocalService) -> None:
    with own_service.client() as client:
        orders, _, _ = shop(client)
        proxy = CuttingProxy(own_service.endpoint, cut_after=0, cuts=0).__enter__()
        staged = pd.DataFrame({"customer": ["ada"]})
        far = Client(proxy.endpoint, own_service.project, key=own_service.key, retries=0)
        with far, pytest.raises(fp.TransportError), far.transaction(ttl=60) as tx:
            tx.table(orders.database_id, orders.id).insert(staged)
            proxy.__exit__(None, None, None)  # the service is gone from here on
            tx.table(orders.database_id, orders.id).insert(staged)
        assert orders.count() == 0
        own_service.advance_clock(61)
        with pytest.raises(fp.APIError, match="transaction_expired"):
            client._request_json("PATCH", f"/tablesdb/transactions/{tx.id}", json={"commit": True})
        assert orders.count() == 0
