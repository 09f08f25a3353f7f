"""SQL over tables, computed locally by polars after the filters reached the service.

The service has no aggregation, distinct or joins; `sql` runs a statement on polars'
SQL context over lazy scans of the tables (`TableQuery.to_polars(lazy=True)`), so the
``WHERE`` filters and the columns the statement uses are pushed to the service, and the rest
(group by, distinct, order, joins, also across tables) is computed here.

>>> people = client.table("crm", "people")                                # doctest: +SKIP
>>> fp.sql("select city, avg(age) from people where age > 30 group by city", people=people)
... # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from ._exceptions import SQLError
from ._tables import DEFAULT_SYSTEM, System, TableQuery

if TYPE_CHECKING:
    import polars as pl

    from ._client import Client


@overload
def sql(statement: str, /, *, eager: Literal[True] = True, **tables: Any) -> pl.DataFrame: ...
@overload
def sql(statement: str, /, *, eager: Literal[False], **tables: Any) -> pl.LazyFrame: ...
def sql(statement: str, /, *, eager: bool = True, **tables: Any) -> pl.DataFrame | pl.LazyFrame:
    """Run the SQL `statement` over `tables` (name → `Table`/`TableQuery`, or anything polars'
    SQL context takes: polars, pandas or Arrow frames) and return a polars DataFrame, or a
    LazyFrame with ``eager=False``. Needs the ``polars`` extra.

    >>> fp.sql("select p.name, o.total from p join o on p.\\"$id\\" = o.person",
    ...        p=client.table("crm", "people"), o=client.table("crm", "orders"))  # doctest: +SKIP
    """
    return run_sql(statement, tables, eager=eager)


def run_sql(
    statement: str, tables: Mapping[str, Any], *, eager: bool = True
) -> pl.DataFrame | pl.LazyFrame:
    """`sql` with the tables as a mapping (names may hold dots, e.g. ``"crm.people"``)."""
    import polars as pl

    if not isinstance(statement, str) or not statement.strip():
        raise SQLError("sql() takes an SQL statement as text, e.g. 'select * from people'.")
    frames = {name: as_frame(table) for name, table in tables.items()}
    try:
        with pl.SQLContext(frames=frames) as context:
            result = context.execute(statement, eager=False)
            return result.collect() if eager else result
    except (pl.exceptions.SQLInterfaceError, pl.exceptions.SQLSyntaxError) as exc:
        given = ", ".join(sorted(frames)) or "none"
        raise SQLError(
            f"The SQL cannot be run: {exc}. Check it against the tables given ({given}) "
            "and their columns."
        ) from exc
    except pl.exceptions.ColumnNotFoundError as exc:
        raise SQLError(
            f"The SQL names a column the tables do not have: {exc}. Check the column names."
        ) from exc


def scan_table(
    client: Client, database_id: str, table_id: str, *, system: System = DEFAULT_SYSTEM
) -> pl.LazyFrame:
    """A polars LazyFrame over the table `table_id` of `database_id`: columns, filters and
    row limits of the lazy query reach the service (``client.table(...).to_polars(lazy=True)``);
    `system` says which ``$`` fields it has (``$id`` by default; True: all, False: none).

    >>> lf = fp.scan_table(client, "crm", "people")                      # doctest: +SKIP
    >>> lf.filter(pl.col("age") > 30).group_by("city").len().collect()    # doctest: +SKIP
    """
    import polars as pl

    frame = client.table(database_id, table_id).to_polars(lazy=True, system=system)
    assert isinstance(frame, pl.LazyFrame)
    return frame


def as_frame(table: Any) -> Any:
    """A table or query as a lazy polars scan; anything else as it is (polars takes it)."""
    if isinstance(table, TableQuery):
        return table.to_polars(lazy=True)
    return table
