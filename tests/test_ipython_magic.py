"""The ``%%fpsql`` cell magic in an IPython shell: ``db.table`` names read through the client
from the ``FRAMEPORT_*`` environment or set with ``%fpsql_client``, ``-o VAR`` keeps the
result, and the notebook's own frames join in."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import polars as pl
import pytest
from IPython.core.interactiveshell import InteractiveShell

from frameport import Client, Table
from frameport._demo import sample_people
from frameport.local import LocalService
from tables_support import load, new_id


@pytest.fixture(scope="module")
def loaded(key_client: Client) -> tuple[Table, pd.DataFrame]:
    return load(key_client, new_id("magic"), sample_people(120, seed=4))


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ipython = InteractiveShell.instance()
    ipython.run_line_magic("load_ext", "frameport")
    yield ipython
    InteractiveShell.clear_instance()


def test_fpsql_reads_tables_through_the_environment_client(
    service: LocalService,
    loaded: tuple[Table, pd.DataFrame],
    shell: InteractiveShell,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
    monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
    monkeypatch.setenv("FRAMEPORT_KEY", service.key)
    table, frame = loaded
    statement = (
        f'select city, count(*) as n from "{table.database_id}.{table.id}" '
        "where age < 40 group by city order by city"
    )
    assert shell.run_cell_magic("fpsql", "-o result", statement) is None
    result = shell.user_ns["result"]
    expected = frame[frame["age"] < 40].groupby("city").size()
    assert isinstance(result, pl.DataFrame)
    assert result.rows() == list(expected.items())


def test_fpsql_uses_the_notebook_client_and_frames(
    key_client: Client, loaded: tuple[Table, pd.DataFrame], shell: InteractiveShell
) -> None:
    table, frame = loaded
    shell.user_ns["client"] = key_client
    shell.user_ns["regions"] = pd.DataFrame({"city": ["Oslo"], "region": ["east"]})
    shell.run_line_magic("fpsql_client", "client")
    result = shell.run_cell_magic(
        "fpsql",
        "",
        f'select r.region, count(*) as n from "{table.database_id}.{table.id}" as p '
        "join regions as r on p.city = r.city group by r.region",
    )
    assert result.rows() == [("east", int((frame["city"] == "Oslo").sum()))]


def test_fpsql_client_refuses_what_is_not_a_client(shell: InteractiveShell) -> None:
    shell.user_ns["nothing"] = 42
    with pytest.raises(ValueError, match="name of a frameport Client variable"):
        shell.run_line_magic("fpsql_client", "nothing")
