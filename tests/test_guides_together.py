"""Every guide (the README's tour and the pages under docs/) and every notebook runs against
one local service, one after the other, and then all of them again: each keeps its data
under IDs of its own, or takes what exists with ``exist_ok``, so none needs to run alone,
first, or once."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from frameport.local import LocalService
from test_docs_examples import PAGES, REPO, point_at, run_page
from test_notebooks import NOTEBOOKS, run_notebook


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a dozen pages and four notebooks, twice: on a busy machine, long
def test_every_guide_and_notebook_runs_twice_on_one_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRAMEPORT_DEMO_PASSWORD", f"pw-{secrets.token_hex(12)}")
    with LocalService(data_dir=tmp_path / "service") as service:
        point_at(service, tmp_path, monkeypatch)
        for round_ in (1, 2):
            for page in PAGES:
                work = tmp_path / f"round-{round_}" / page.relative_to(REPO).as_posix()
                work.mkdir(parents=True)
                monkeypatch.chdir(work)
                run_page(page, service)
            for notebook in NOTEBOOKS:
                work = tmp_path / f"round-{round_}" / notebook.name
                work.mkdir(parents=True)
                run_notebook(notebook, work)
        databases = set(service.client().databases()["$id"])
    assert {"tour", "crm", "pipelines", "quickstart", "export", "sql"} <= databases
