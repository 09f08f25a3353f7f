"""The IPython extension: ``%load_ext frameport`` adds the ``%%fpsql`` cell magic.

A cell runs its SQL with `frameport.sql` (polars computes it; filters and columns reach the
service). Tables are named ``db.table`` (``"db.my-table"`` in quotes when an ID has a
hyphen) and read through the client set with ``%fpsql_client VAR``, or else one made from
the ``FRAMEPORT_*`` environment (`Client.from_env`). Names of the notebook's own tables,
queries and frames work too. Long reads show a progress bar (``FRAMEPORT_PROGRESS=0`` hides
it). ``-o VAR`` keeps the result (a polars DataFrame) in the variable VAR.

.. code-block:: text

    %load_ext frameport
    %fpsql_client client

    %%fpsql -o by_city
    select city, avg(age) as mean_age from crm.people where age > 30 group by city
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import pyarrow as pa
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from ._client import Client
from ._sql import run_sql
from ._tables import TableQuery

# A table named after FROM or JOIN: db.table, or "db.table" in double quotes.
_TABLE_REFERENCE = re.compile(
    r"\b(?:from|join)\s+(?:\"(?P<quoted>[^\".]+\.[^\"]+)\"|(?P<plain>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?))",
    re.IGNORECASE,
)


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register the ``%%fpsql`` and ``%fpsql_client`` magics (``%load_ext frameport``)."""
    ipython.register_magics(FrameportMagics)


@magics_class
class FrameportMagics(Magics):
    """``%%fpsql`` (SQL over the service's tables) and ``%fpsql_client`` (the client it uses)."""

    def __init__(self, shell: InteractiveShell) -> None:
        super().__init__(shell)
        self._client: Client | None = None

    @line_magic
    def fpsql_client(self, line: str) -> None:
        """``%fpsql_client VAR``: read ``db.table`` names through the notebook's client VAR."""
        name = line.strip()
        client = self._namespace().get(name) if name else None
        if not isinstance(client, Client):
            raise ValueError(
                f"%fpsql_client takes the name of a frameport Client variable (got {name!r}); "
                "e.g. client = fp.Client(...), then %fpsql_client client"
            )
        self._client = client

    @magic_arguments()  # type: ignore[untyped-decorator]  # IPython's magic_arguments is untyped
    @argument("-o", "--output", metavar="VAR", help="keep the result in the variable VAR")  # type: ignore[untyped-decorator]
    @cell_magic
    def fpsql(self, line: str, cell: str) -> Any:
        """Run the cell's SQL over the service's tables (``db.table``) and the notebook's
        frames; the result is a polars DataFrame."""
        options = parse_argstring(self.fpsql, line)
        result = run_sql(cell, self._tables(cell))
        if options.output:
            self._namespace()[options.output] = result
            return None
        return result

    def _tables(self, statement: str) -> dict[str, Any]:
        tables: dict[str, Any] = {}
        for match in _TABLE_REFERENCE.finditer(statement):
            name = match["quoted"] or match["plain"]
            if name in tables:
                continue
            if _is_frame(self._namespace().get(name)):
                tables[name] = self._namespace()[name]
            elif "." in name:
                database, table = name.split(".", 1)
                tables[name] = self._table_client().table(database, table)
        return tables

    def _namespace(self) -> dict[str, Any]:
        assert self.shell is not None
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    def _table_client(self) -> Client:
        if self._client is None:
            self._client = Client.from_env()
        return self._client


def _is_frame(value: object) -> bool:
    import polars as pl

    return isinstance(value, TableQuery | pl.DataFrame | pl.LazyFrame | pd.DataFrame | pa.Table)
