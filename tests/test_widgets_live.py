"""The live table widget against the local service, driven through its models: the rows and
status it shows, following changes made through a client (a signed-in user's realtime socket,
or an API key's polls), paging, a table dropped under it, closing, and no secret in its state.

A change is waited for on the live table's iterator, which hands a batch on only after the
widget's callback has run; a status change with no batch is a bounded wait, never a sleep."""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Callable, Iterator

import pandas as pd
import pytest

import frameport as fp
import frameport.widgets as fpw
from frameport.local import LocalService
from tables_support import new_id
from test_widgets_login import all_states, session_secrets

WAIT = 15.0
"""Seconds a test waits for the widget before it fails."""


@pytest.fixture
def people(key_client: fp.Client) -> fp.Table:
    """A table of two people that signed-in users may read."""
    schema = {"name": "string(20)", "age": "integer"}
    table = key_client.create_table(
        new_id("live-widget"), "people", schema=schema, permissions=['read("users")']
    )
    table.insert(pd.DataFrame({"$id": ["ada", "bo"], "name": ["Ada", "Bo"], "age": [36, 41]}))
    return table


@pytest.fixture
def watched(people: fp.Table, user_client: fp.Client) -> Iterator[fpw.LiveTableView]:
    """The widget on the people table, as the signed-in user sees it."""
    view = fpw.live_table(user_client.table(people.database_id, people.id).select("name", "age"))
    yield view
    view.close()


def shown(view: fpw.LiveTableView) -> str:
    return html.unescape(str(view.rows.value))


def status(view: fpw.LiveTableView) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", str(view.status_line.value)))


def wait_for(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_it_shows_the_rows_and_follows_inserts_and_updates(
    watched: fpw.LiveTableView, people: fp.Table
) -> None:
    assert watched.page_label.value == "Rows 1–2 of 2"
    assert "Ada" in shown(watched) and "Bo" in shown(watched)
    assert status(watched).startswith("Connected")
    batches = iter(watched.live)
    people.insert(pd.DataFrame({"$id": ["cy"], "name": ["Cy"], "age": [29]}))
    next(batches)
    assert "Cy" in shown(watched)
    assert watched.page_label.value == "Rows 1–3 of 3"
    assert "last event" in status(watched) and "lag" in status(watched)
    people.upsert(pd.DataFrame({"$id": ["bo"], "age": [77]}))
    next(batches)
    assert "77" in shown(watched) and "41" not in shown(watched)


def test_closing_it_closes_the_live_table_it_started(watched: fpw.LiveTableView) -> None:
    assert watched.live.status.connected
    watched.close()
    assert not watched.live.status.connected
    assert status(watched).startswith("Closed")


def test_a_live_table_given_to_it_stays_open(people: fp.Table, user_client: fp.Client) -> None:
    with user_client.table(people.database_id, people.id).live() as live:
        view = fpw.live_table(live, page_size=1)
        assert view.live is live and view.page_label.value == "Rows 1–1 of 2"
        view.close()
        assert live.status.connected


def test_with_an_api_key_it_polls_and_says_so(people: fp.Table) -> None:
    with fpw.live_table(people, poll=0.2) as view:
        assert status(view).startswith("Polling")
        batches = iter(view.live)
        people.insert(pd.DataFrame({"$id": ["dee"], "name": ["Dee"], "age": [52]}))
        while "Dee" not in shown(view):
            next(batches)
        assert view.page_label.value == "Rows 1–3 of 3"


def test_pages_of_the_live_rows(people: fp.Table, user_client: fp.Client) -> None:
    query = user_client.table(people.database_id, people.id)
    with fpw.live_table(query, page_size=2) as view:
        assert view.previous_button.disabled and view.next_button.disabled
        batches = iter(view.live)
        people.insert(pd.DataFrame({"$id": ["cy"], "name": ["Cy"], "age": [29]}))
        next(batches)
        assert view.page_label.value == "Rows 1–2 of 3" and not view.next_button.disabled
        view.next_button.click()
        assert view.page_label.value == "Rows 3–3 of 3" and "Cy" in shown(view)
        assert view.next_button.disabled and not view.previous_button.disabled
        people.where(fp.col("name") == "Cy").delete(progress=False)
        next(batches)
        assert view.page_label.value == "Rows 1–2 of 2"  # back to the last page there is


def test_a_dropped_table_is_said_in_its_status(people: fp.Table, user_client: fp.Client) -> None:
    query = user_client.table(people.database_id, people.id)
    with fpw.live_table(query, heartbeat=0.2) as view:  # a heartbeat finds the drop
        batches = iter(view.live)
        people.drop()
        with pytest.raises(fp.NotFoundError):
            next(batches)
        wait_for(lambda: status(view).startswith("Ended"), "the status to say it ended")
        assert "could not be found" in status(view) and "http" not in status(view)
        assert "Ada" in shown(view)  # the rows stay as they were


def test_no_secret_in_its_state_or_views(
    watched: fpw.LiveTableView, user_client: fp.Client, service: LocalService
) -> None:
    saved = (
        json.dumps(all_states(watched), default=str)
        + repr(watched)
        + json.dumps(watched._repr_mimebundle_())
    )
    for secret in [service.key, *session_secrets(user_client)]:
        assert secret not in saved
    assert not re.search(r"eyJ[A-Za-z0-9+/=_-]{20,}", saved)


def test_views_without_a_widget_frontend(watched: fpw.LiveTableView) -> None:
    bundle = watched._repr_mimebundle_()
    assert "Rows 1–2 of 2" in bundle["text/plain"] and "Connected" in bundle["text/plain"]
    assert "Ada" in bundle["text/plain"]
    assert "<table" in bundle["text/html"] and "Connected" in bundle["text/html"]


def test_a_bad_source_or_page_size_is_said_plainly(people: fp.Table) -> None:
    with pytest.raises(TypeError, match="a table, a query or a LiveTable"):
        fpw.live_table("people")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="page_size must be a whole number"):
        fpw.live_table(people, page_size=0)
