"""The ``>>>`` examples in the docstrings of the public names run against a local service.

Each docstring runs in a namespace holding what its examples name: `client`, a table of
five people (`people`, `table`) and their frame `df`, a bucket (`bucket`, and `reports`)
with a Parquet file `f`, a function `etl`, and a working directory with ``big.csv`` and a
``src/`` to deploy. Examples marked ``# doctest: +SKIP`` are shown, not run (those with
``await``, written for the asynchronous classes whose docstrings the synchronous ones share).
"""

from __future__ import annotations

import doctest
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import frameport as fp
import frameport.widgets
from frameport.local import LocalService

SYNC_PUBLIC_OBJECTS: dict[str, Any] = {
    **{
        name: getattr(fp, name)
        for name in fp.__all__
        if not name.startswith("Async") and (inspect.isclass(getattr(fp, name)) or name == "col")
    },
    **{f"widgets.{name}": getattr(frameport.widgets, name) for name in frameport.widgets.__all__},
    "LocalService": LocalService,
}
FINDER = doctest.DocTestFinder()


def public_examples() -> list[doctest.DocTest]:
    """One DocTest per docstring (a docstring the finder meets twice, through a class and
    the async class it wraps, counts once, under its shorter name)."""
    found: dict[str, doctest.DocTest] = {}
    for name, obj in SYNC_PUBLIC_OBJECTS.items():
        for test in FINDER.find(obj, name):
            known = found.get(test.docstring or "")
            if known is None or len(test.name) < len(known.name):
                found[test.docstring or ""] = test
    return sorted(found.values(), key=lambda test: test.name)


RUNNABLE = [
    test
    for test in public_examples()
    if any(not example.options.get(doctest.SKIP) for example in test.examples)
]


@pytest.fixture(scope="module")
def namespace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    work = tmp_path_factory.mktemp("docstrings")
    (work / "big.csv").write_text("n\n" + "\n".join(map(str, range(1000))))
    (work / "src").mkdir()
    (work / "src" / "main.py").write_text("print('hello')\n")
    df = pd.DataFrame(
        {
            "name": ["Ada", "Bjørn", "Chiara", "Dag", "Eli"],
            "age": pd.array([36, 41, 29, None, 52], dtype="Int64"),
            "city": ["Oslo", "Bergen", "Oslo", "Tromsø", "Bergen"],
        }
    )
    with LocalService(data_dir=work / "service") as service, service.client() as client:
        people = client.create_table("crm", "people", schema=df)
        people.insert(df, progress=False)
        bucket = client.create_bucket("reports", "Reports")
        f = bucket.upload_dataframe(df, "people.parquet", progress=False)
        client.create_function("etl", "ETL", "python-3.11", entrypoint="main.py")
        yield {
            "fp": fp, "pd": pd, "Path": Path, "client": client, "df": df, "people": people,
            "table": people, "bucket": bucket, "reports": bucket, "f": f,
            "etl": client.function("etl"), "work": work,
        }  # fmt: skip


def test_public_docstrings_have_examples_to_run() -> None:
    assert {"Bucket", "TableQuery", "LocalService"} <= {t.name.split(".")[0] for t in RUNNABLE}


@pytest.mark.parametrize("example", RUNNABLE, ids=lambda t: t.name)
def test_docstring_example_runs(
    example: doctest.DocTest, namespace: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(namespace["work"])
    monkeypatch.setenv("FRAMEPORT_PROGRESS", "0")
    example.globs = {**example.globs, **namespace}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(example)
    assert runner.summarize(verbose=False).failed == 0
