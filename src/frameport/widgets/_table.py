"""`table`: a table query shown a page at a time, each page one request for its rows only."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from .._core._pages import TOTAL_CAP
from .._exceptions import FrameportError
from .._tables import PagePosition, TableBrowser, TablePage
from ._display import describe_failure, frame_html, frame_text, message_html
from ._paging import PagedRows, rows_text

if TYPE_CHECKING:
    from .._tables import TableQuery


class TablePreview(PagedRows):
    """Rows of `query`, `page_size` at a time, with Previous / Next and a label
    ("rows 21–40 of 57"). Only the rows shown are fetched: each page is one request with a
    limit and the previous page's last row as cursor (more when the client drops rows the
    service sent, as a filter the service cannot apply exactly does); `page` is the page
    shown.
    """

    def __init__(self, query: TableQuery, *, page_size: int = 20) -> None:
        self.query = query
        self.browser = TableBrowser(query, page_size)
        self.page: TablePage | None = None
        self._positions = [PagePosition()]  # where each page seen so far starts
        super().__init__()
        self.add_class("frameport-table")
        self.show_page(0)

    def show_page(self, number: int) -> None:
        """Show page `number` (0-based): the next one, or one seen before."""
        number = min(max(number, 0), len(self._positions) - 1)
        try:
            page = self.browser.page(self._positions[number])
        except (FrameportError, ValueError) as exc:
            self.rows.value = message_html(describe_failure(exc), error=True)
            self.previous_button.disabled = self.next_button.disabled = True
            return
        self.page, self.page_number = page, number
        del self._positions[number + 1 :]
        if page.next_position is not None:
            self._positions.append(page.next_position)
        self.rows.value = frame_html(page.frame)
        self.page_label.value = self._page_text()
        self.previous_button.disabled = number == 0
        self.next_button.disabled = page.next_position is None

    def _page_text(self) -> str:
        page = self.page
        if page is None:
            return ""
        last = page.start + len(page.frame)
        if page.total_exact:
            of = f"{page.total:,}"
        elif page.total >= TOTAL_CAP:
            of = f"≥ {max(page.total, last):,}"
        else:  # the client drops some of the rows the service counts
            of = f"≤ {max(page.total, last):,}"
        return rows_text(page.start, len(page.frame), of)

    def summary(self) -> str:
        """The table preview as plain text: the query, the page and its rows."""
        lines = [f"frameport table preview: {self.query!r} · {self._page_text()}"]
        if self.page is not None:
            lines.append(frame_text(self.page.frame))
        return "\n".join(lines)

    def _html_body(self) -> str:
        title = html.escape(f"{self.query!r} · {self._page_text()}")
        return f"<p><b>{title}</b></p>{self.rows.value}"


def table(query: TableQuery, page_size: int = 20) -> TablePreview:
    """A paged view of a table or query that fetches only the rows it shows.

    Example (a notebook cell)::

        fp.widgets.table(client.table("crm", "people").query("age > 30"), page_size=10)
    """
    return TablePreview(query, page_size=page_size)
