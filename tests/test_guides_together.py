"""Every guide (the README's tour and the pages under docs/) and every notebook runs against
one local service, one after the other, and then all of them again: each keeps its data
under IDs of its own, or takes what exists with ``exist_ok``, so none needs to run alone,
first, or once.

The first round runs the pages in the reverse of the second's order, so a page that uses
data only an earlier page (the README, getting-started...) makes, which a reader of that
page alone would not have, fails in the first round. A failing example is named by its page,
block and round, and the other pages still run. The notebooks also run alone, each on its
own embedded service, in test_notebooks.py.

In the "ray" group of the xdist workers (pyproject's --dist loadgroup), with test_ray.py: the
outgrowing-one-machine guide starts a local Ray, which the Ray tests on the same worker share
instead of each worker starting one.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from frameport.local import LocalService
from test_docs_examples import PAGES, REPO, point_at, run_page
from test_notebooks import NOTEBOOKS, run_notebook


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
@pytest.mark.timeout(1800)  # a dozen pages and four notebooks, twice: on a busy machine, long
def test_every_guide_and_notebook_runs_twice_on_one_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRAMEPORT_DEMO_PASSWORD", f"pw-{secrets.token_hex(12)}")
    failures: list[Exception] = []
    with LocalService(data_dir=tmp_path / "service") as service:
        point_at(service, tmp_path, monkeypatch)
        for round_, pages in ((1, PAGES[::-1]), (2, PAGES)):
            for page in pages:
                work = tmp_path / f"round-{round_}" / page.relative_to(REPO).as_posix()
                work.mkdir(parents=True)
                monkeypatch.chdir(work)
                try:
                    run_page(page, service)
                except Exception as error:
                    error.add_note(f"in round {round_} of the guides on one service")
                    failures.append(error)
            for notebook in NOTEBOOKS:
                work = tmp_path / f"round-{round_}" / notebook.name
                work.mkdir(parents=True)
                try:
                    run_notebook(notebook, work)
                except Exception as error:
                    error.add_note(f"{notebook.name}, in round {round_} on one service")
                    failures.append(error)
        databases = set(service.client().databases()["$id"])
    if failures:
        raise ExceptionGroup(f"{len(failures)} guide or notebook runs failed", failures)
    assert {"tour", "crm", "pipelines", "quickstart", "export", "sql"} <= databases
