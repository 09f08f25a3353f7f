"""`fp.widgets.live_table` in JupyterLab under headless Chromium: a notebook displays the live
widget on a table of the test's local service as a signed-in user; the test then inserts and
updates rows through its own client and sees each change appear in the rendered widget, saves
the notebook and checks that the saved file holds no secret.

The notebook reads the user's e-mail and password from a file outside JupyterLab's root, so
no cell holds them. A picture of the widget goes to test-artifacts/widgets/ (docs/images/
with FRAMEPORT_DOCS_SCREENSHOTS=1).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from lab_support import (
    UI_WAIT_MS,
    JupyterLab,
    assert_no_secret,
    notebook_page,
    save_notebook,
    save_widget_screenshots,
)

import frameport as fp
from conftest import UserLogin
from frameport.local import LocalService
from tables_support import new_id

pytest_plugins = ["lab_server"]

NOTEBOOK = "live_widget.ipynb"
CELL = """\
import json
from pathlib import Path

import frameport as fp
import frameport.widgets

account = json.loads(Path({account!r}).read_text())
client = fp.Client(account["endpoint"], account["project"])
client.login(account["email"], account["password"])
people = client.table(account["database"], account["table"]).select("name", "age")
fp.widgets.live_table(people)
"""


def write_notebook(path: Path, account: Path) -> None:
    cell: dict[str, object] = {
        "cell_type": "code",
        "id": "live-widget",
        "metadata": {},
        "source": CELL.format(account=str(account)),
        "outputs": [],
        "execution_count": None,
    }
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": kernel}}
    path.write_text(json.dumps({**notebook, "cells": [cell]}))


@pytest.mark.slow
def test_the_live_widget_shows_a_change_made_after_it_was_displayed(
    jupyter_lab: JupyterLab,
    service: LocalService,
    key_client: fp.Client,
    make_user: Callable[..., UserLogin],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    user = make_user()
    people = key_client.create_table(
        new_id("browser-live"),
        "people",
        schema={"name": "string(20)", "age": "integer"},
        permissions=['read("users")'],
    )
    people.insert(pd.DataFrame({"$id": ["ada", "bo"], "name": ["Ada", "Bo"], "age": [36, 41]}))
    account = tmp_path / "account.json"  # outside JupyterLab's root: no cell holds a secret
    account.write_text(
        json.dumps(
            {
                "endpoint": service.endpoint,
                "project": service.project,
                "email": user.email,
                "password": user.password,
                "database": people.database_id,
                "table": people.id,
            }
        )
    )
    write_notebook(jupyter_lab.root / NOTEBOOK, account)

    with notebook_page(jupyter_lab, NOTEBOOK) as page:
        widget = page.locator(".jp-OutputArea-output .frameport-live-table")
        expect(widget).to_contain_text("Rows 1–2 of 2", timeout=UI_WAIT_MS)
        expect(widget).to_contain_text("Connected")
        people.insert(pd.DataFrame({"$id": ["cy"], "name": ["Cy"], "age": [29]}))
        expect(widget).to_contain_text("Rows 1–3 of 3", timeout=UI_WAIT_MS)
        expect(widget.get_by_role("cell", name="Cy", exact=True)).to_be_visible()
        expect(widget).to_contain_text("last event")
        people.upsert(pd.DataFrame({"$id": ["bo"], "age": [77]}))
        expect(widget.get_by_role("cell", name="77", exact=True)).to_be_visible(timeout=UI_WAIT_MS)
        expect(widget.get_by_role("cell", name="41", exact=True)).to_have_count(0)
        save_widget_screenshots(page, {"frameport-live-table": "widget-live-table.png"})
        save_notebook(page)

    saved = (jupyter_lab.root / NOTEBOOK).read_text()
    assert "application/vnd.jupyter.widget-state+json" in saved  # the widget state was saved
    assert "Cy" in saved
    assert_no_secret(saved, [user.password, service.key])
