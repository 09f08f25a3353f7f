"""The paged table preview against the local service."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator

import pandas as pd
import pytest

import frameport.widgets as fpw
from frameport import ID, Client, Table, TableQuery
from frameport._demo import sample_people
from frameport.local import LocalService

ROWS = 57


@pytest.fixture(scope="module")
def people(service: LocalService) -> Iterator[Table]:
    with Client(service.endpoint, service.project, key=service.key) as admin:
        table = admin.create_table(f"widgets-{ID.unique()}", "people", schema=sample_people(1))
        table.insert(sample_people(ROWS), progress=False)
        yield table


def ids_shown(preview: fpw.TablePreview) -> list[str]:
    assert preview.page is not None
    return list(preview.page.frame["$id"])


def walk_all_pages(preview: fpw.TablePreview) -> list[str]:
    seen = ids_shown(preview)
    while not preview.next_button.disabled:
        preview.next_button.click()
        seen.extend(ids_shown(preview))
    return seen


def test_pages_are_fetched_one_at_a_time(people: Table) -> None:
    preview = fpw.table(people, page_size=20)
    assert preview.page_label.value == "Rows 1–20 of 57"
    assert preview.page is not None and preview.page.rows_fetched == 20
    assert preview.previous_button.disabled
    preview.next_button.click()
    preview.next_button.click()
    assert preview.page_label.value == "Rows 41–57 of 57"
    assert preview.page.rows_fetched == 17 and preview.next_button.disabled
    preview.previous_button.click()
    assert preview.page_label.value == "Rows 21–40 of 57"
    assert ids_shown(preview) == list(people.to_pandas(progress=False)["$id"][20:40])


@pytest.mark.parametrize(
    "make_query",
    [
        lambda t: t.query("age > 30").sort("age", ascending=False),
        lambda t: t.sort("age"),
        lambda t: t.select("name", "city").sort("city"),
    ],
    ids=["filter-sort", "sort", "select"],
)
def test_pages_follow_the_query(people: Table, make_query: Callable[[Table], TableQuery]) -> None:
    query = make_query(people)
    expected = query.to_pandas(progress=False)
    preview = fpw.table(query, page_size=7)
    assert walk_all_pages(preview) == list(expected["$id"])
    assert preview.page is not None
    assert list(preview.page.frame.columns) == list(expected.columns)


def test_page_after_a_null_in_the_sort_column(people: Table) -> None:
    # Nulls sort first; the service refuses a cursor on a row with null there (offset then).
    query = people.sort("age")
    expected = list(query.to_pandas(progress=False)["$id"][:3])
    preview = fpw.table(query, page_size=1)
    assert preview.page is not None and preview.page.frame["age"].isna().all()
    preview.next_button.click()
    preview.next_button.click()
    preview.previous_button.click()
    preview.next_button.click()
    assert preview.page_label.value == "Rows 3–3 of 57"
    assert ids_shown(preview) == expected[2:3]


def test_head_limits_the_pages(people: Table) -> None:
    preview = fpw.table(people.head(25), page_size=10)
    shown = walk_all_pages(preview)
    assert len(shown) == 25
    assert preview.page is not None and preview.page.rows_fetched == 5
    assert preview.page_label.value == "Rows 21–25 of 25"


def test_empty_result(people: Table) -> None:
    preview = fpw.table(people.query("age > 1000"))
    assert preview.page_label.value == "No rows"
    assert preview.next_button.disabled and preview.previous_button.disabled


def test_missing_table_is_said_plainly(service: LocalService) -> None:
    with Client(service.endpoint, service.project, key=service.key) as admin:
        preview = fpw.table(admin.table("nowhere", "nothing"))
    assert "'nowhere' could not be found" in html.unescape(preview.rows.value)
    assert preview.next_button.disabled


def test_views_without_a_widget_frontend(people: Table) -> None:
    first = people.head(3).to_pandas(progress=False)
    bundle = fpw.table(people, page_size=3)._repr_mimebundle_()
    assert "Rows 1–3 of 57" in bundle["text/plain"]
    assert all(name in bundle["text/plain"] for name in first["name"])
    assert "<table" in bundle["text/html"] and "Rows 1–3 of 57" in bundle["text/html"]


def test_pages_fill_up_when_the_client_drops_rows(service: LocalService) -> None:
    # The service compares text ignoring case, the client exactly: most rows it sends for
    # city == 'Oslo' are dropped, and each page asks for more until it is full.
    cities = ["Oslo", "oslo", "OSLO", "Bergen"] * 6
    frame = pd.DataFrame({"city": pd.array(cities, dtype="str"), "n": range(len(cities))})
    with Client(service.endpoint, service.project, key=service.key) as admin:
        table = admin.create_table(f"widgets-{ID.unique()}", "cities", schema=frame)
        table.insert(frame, progress=False)
        query = table.query("city == 'Oslo'")
        expected = list(query.to_pandas(progress=False)["$id"])
        preview = fpw.table(query, page_size=4)
        assert len(ids_shown(preview)) == 4
        assert preview.page_label.value == "Rows 1–4 of ≤ 18"
        assert walk_all_pages(preview) == expected
        assert preview.page_label.value == "Rows 5–6 of 6"
        preview.previous_button.click()
        assert preview.page_label.value == "Rows 1–4 of ≤ 18"


def test_no_empty_page_after_an_exactly_full_one(people: Table) -> None:
    preview = fpw.table(people, page_size=19)  # 57 rows: three full pages
    preview.next_button.click()
    preview.next_button.click()
    assert preview.page_label.value == "Rows 39–57 of 57"
    assert preview.next_button.disabled
