"""`to_dask`: dask frames of $sequence ranges, computed on a LocalCluster of two worker
processes, equal `to_pandas` (the oracle) row for row and dtype for dtype.

The workers inherit FRAMEPORT_KEY and FRAMEPORT_CONFIG_DIR from this module's environment, set
before the cluster starts: the frames built with `credentials="auto"` reach the workers as
references ("env", "saved"), never as the secret.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from dask.base import tokenize
from distributed import Client as DaskClient
from distributed import LocalCluster

import frameport as fp
from conftest import UserLogin
from frameport import Client, Table, TableQuery
from frameport._dask import client_reference
from frameport._demo import sample_people
from frameport.local import LocalService
from tables_support import load, new_id, strings_as_in_pandas_3

# Its module fixtures are costly (tables loaded, a process started): one worker runs them.
pytestmark = pytest.mark.xdist_group("dask")

ROWS = 6_000


@pytest.fixture(scope="module")
def environment(service: LocalService, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """FRAMEPORT_KEY and a credential directory, set before the workers start."""
    config = tmp_path_factory.mktemp("dask-config")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FRAMEPORT_KEY", service.key)
        patch.setenv("FRAMEPORT_CONFIG_DIR", str(config))
        yield config


@pytest.fixture(scope="module")
def cluster(environment: Path) -> Iterator[DaskClient]:
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as local,
        DaskClient(local) as dask_client,
    ):
        dask_client.run(strings_as_in_pandas_3)  # the workers build frames too
        yield dask_client


@pytest.fixture(scope="module")
def key_client(service: LocalService, environment: Path) -> Iterator[Client]:
    with service.client() as client:
        yield client


@pytest.fixture(scope="module")
def people(key_client: Client) -> Table:
    """Sample people readable by any signed-in user, with a block of rows deleted."""
    table, _ = load(
        key_client, new_id("dask"), sample_people(ROWS, seed=4),
        permissions=[fp.Permission.read(fp.Role.users())],
    )  # fmt: skip
    table.where(fp.col("$sequence").between(1_000, 2_200)).delete()
    return table


def assert_computes_to(ddf: object, query: TableQuery, **options: object) -> None:
    expected = query.to_pandas(progress=False, **options)  # type: ignore[arg-type]
    assert dict(ddf.dtypes) == dict(expected.dtypes)  # type: ignore[attr-defined]
    computed = ddf.compute().reset_index(drop=True)  # type: ignore[attr-defined]
    pd.testing.assert_frame_equal(computed, expected)


def test_compute_on_two_workers_equals_to_pandas(cluster: DaskClient, people: Table) -> None:
    assert len(cluster.scheduler_info()["workers"]) == 2
    query = people.query("city != 'Oslo' and age > 30")
    ddf = query.to_dask(partitions=4)
    assert ddf.npartitions == 4
    assert_computes_to(ddf, query)


def test_every_row_and_column_of_the_table(cluster: DaskClient, people: Table) -> None:
    assert_computes_to(people.to_dask(partitions=3), people)


def test_selected_columns_and_descending_sequence(cluster: DaskClient, people: Table) -> None:
    query = people.query("active").select("name", "score").sort("$sequence", ascending=False)
    assert_computes_to(query.to_dask(partitions=5), query)


def test_columns_chosen_in_dask_are_read_alone(cluster: DaskClient, people: Table) -> None:
    ddf = people.to_dask(partitions=2)[["age", "$id"]]
    expected = people.to_pandas(progress=False)[["age", "$id"]]
    pd.testing.assert_frame_equal(ddf.compute().reset_index(drop=True), expected)


def test_no_matching_row_gives_one_empty_partition(cluster: DaskClient, people: Table) -> None:
    query = people.query("age > 500")
    ddf = query.to_dask(partitions=4)
    assert ddf.npartitions == 1
    assert_computes_to(ddf, query)


def test_to_parquet_writes_one_file_per_partition(
    cluster: DaskClient, people: Table, tmp_path: Path
) -> None:
    query = people.query("score > 55")
    query.to_dask(partitions=3).to_parquet(tmp_path / "out", schema=query.schema())
    files = sorted(p.name for p in (tmp_path / "out").glob("*.parquet"))
    assert files == ["part.0.parquet", "part.1.parquet", "part.2.parquet"]
    assert pq.read_schema(tmp_path / "out" / files[0]).field("age").type == "int64"
    back = pd.read_parquet(tmp_path / "out").reset_index(drop=True)
    pd.testing.assert_frame_equal(back, query.to_pandas(progress=False))


def test_arrow_dtypes_write_parquet_with_the_query_schema(
    cluster: DaskClient, people: Table, tmp_path: Path
) -> None:
    query = people.query("age < 40")
    ddf = query.to_dask(partitions=2, dtype_backend="pyarrow")
    assert_computes_to(ddf, query, dtype_backend="pyarrow")
    # $permissions holds tuples (pandas can hash them), which dask cannot type from its meta
    ddf.to_parquet(tmp_path / "arrow", schema=query.schema())
    back = pq.read_table(tmp_path / "arrow")  # pandas cannot read back ArrowDtype lists' metadata
    expected = query.to_arrow(progress=False)
    assert back.select(expected.schema.names).equals(expected)


def test_the_key_from_the_environment_stays_out_of_the_graph(
    service: LocalService, people: Table
) -> None:
    ddf = people.to_dask(partitions=2)
    graph = pickle.dumps(dict(ddf.__dask_graph__()))
    assert service.key.encode() not in graph
    assert client_reference(people._async._requester).source == "env"


def test_an_embedded_key_is_in_no_repr_or_key_but_in_the_tasks(
    cluster: DaskClient, service: LocalService, people: Table
) -> None:
    query = people.query("age > 70")
    ddf = query.to_dask(partitions=2, credentials="embedded")
    graph = dict(ddf.__dask_graph__())
    assert service.key not in repr(graph) + str(ddf.__dask_keys__()) + tokenize(ddf)
    assert service.key.encode() in pickle.dumps(graph)  # documented: a pickled task
    assert_computes_to(ddf, query)


def test_a_saved_session_reaches_the_workers_by_reference(
    cluster: DaskClient,
    service: LocalService,
    people: Table,
    make_user: object,
    environment: Path,
) -> None:
    user: UserLogin = make_user()  # type: ignore[operator]
    with Client(service.endpoint, service.project) as signed_in:
        signed_in.login(user.email, user.password, save=True)
        table = signed_in.table(people.database_id, people.id)
        assert client_reference(table._async._requester).source == "saved"
        query = table.query("age >= 60")
        ddf = query.to_dask(partitions=3)  # types inferred: users may not read the columns
        session = signed_in._async._credentials.session
        assert session is not None and session.cookies
        tasks = pickle.dumps(dict(ddf.__dask_graph__()))
        assert not any(c.reveal().encode() in tasks for c in session.cookies.values())
        assert_computes_to(ddf, query)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda t: t.sort("age"), "sort"),
        (lambda t: t.head(10), "head"),
    ],
)
def test_what_partitions_cannot_express_is_refused(
    people: Table, build: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build(people).to_dask(partitions=2)  # type: ignore[operator]


def test_partitions_written_to_a_bucket_read_back(
    cluster: DaskClient, key_client: Client, service: LocalService, people: Table
) -> None:
    bucket = key_client.create_bucket(new_id("lake"), "lake")
    options = {"endpoint": service.endpoint, "project": service.project, "key": service.key}
    target = f"frameport://{bucket.id}/people"
    query = people.query("age > 50")
    query.to_dask(partitions=3).to_parquet(target, schema=query.schema(), storage_options=options)
    files = sorted(bucket.list_files()["name"])
    assert files == [f"people/part.{n}.parquet" for n in range(3)]
    back = pd.read_parquet(target, storage_options=options).reset_index(drop=True)
    pd.testing.assert_frame_equal(back, query.to_pandas(progress=False))
