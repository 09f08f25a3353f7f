"""`live_table`: a live table's rows, a page at a time, and its status, updated in place.

The live table applies change batches on frameport's loop thread and calls the widget there;
the widget sets its traits from that thread (ipywidgets sends them through the kernel's comm,
which any thread may use). A lock keeps a page being drawn for a click on the notebook's
thread from interleaving with one drawn for a batch.
"""

from __future__ import annotations

import html
import threading
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .._core._pages import check_page_size
from .._core._sync import Closing, event_loop
from .._schema import to_pandas
from .._tables import TableQuery
from .._tables.changes import LiveTable
from ._display import describe_failure, frame_html, frame_text, message_html
from ._paging import PagedRows, rows_text

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from .._tables.changes import ChangesStatus

STATUS_EVERY = 1.0
"""Seconds between refreshes of the status line, which changes without a batch too (a drop,
a reconnection, a poll, the error that ended the live table)."""


class LiveTableView(PagedRows, Closing):
    """The rows of the LiveTable `live`, `page_size` at a time (in the live table's order),
    under a `status_line`: connected or polling, when the last event came and its lag, the
    catch-ups, and the error that ended it. Each change batch the live table applies draws
    the page shown again, in place; the status is refreshed every second.

    `close()` (or leaving a ``with`` block) stops the updates, and closes the live table if
    the widget started it (`owns_live`); a live table it was given stays open for its owner.
    Its state holds the rows and the status only, never a credential.
    """

    def __init__(self, live: LiveTable, *, page_size: int = 20, owns_live: bool = False) -> None:
        self.live = live
        self.page_size = check_page_size(page_size)
        self.owns_live = owns_live
        self.frame: pd.DataFrame | None = None  # the rows of the page shown
        self.closed = False
        self.status_line = widgets.HTML()
        self._drawing = threading.RLock()
        super().__init__(above=[self.status_line])
        self.add_class("frameport-live-table")
        self.show_page(0)
        live.on_change(self._changed)
        event_loop().call_soon_threadsafe(self._refresh_status)

    def show_page(self, number: int) -> None:
        """Show page `number` (0-based) of the rows now, or the last page there is."""
        with self._drawing:
            rows: pa.Table = self.live.to_arrow()
            size = self.page_size
            number = min(max(number, 0), max(rows.num_rows - 1, 0) // size)
            start = number * size
            self.page_number, self.frame = number, to_pandas(rows.slice(start, size))
            self.rows.value = frame_html(self.frame)
            self.page_label.value = rows_text(start, len(self.frame), f"{rows.num_rows:,}")
            self.previous_button.disabled = number == 0
            self.next_button.disabled = start + size >= rows.num_rows
            self._show_status()

    def _changed(self, _batch: pa.RecordBatch) -> None:
        if not self.closed:
            self.show_page(self.page_number)

    def _refresh_status(self) -> None:
        """On frameport's loop: show the status, and again in `STATUS_EVERY` seconds."""
        if not self.closed:
            self._show_status()
            event_loop().call_later(STATUS_EVERY, self._refresh_status)

    def _show_status(self) -> None:
        with self._drawing:
            text, failed = status_text(self.live.status, closed=self.closed)
            self.status_line.value = message_html(text, error=failed)

    def close(self) -> None:
        """Stop the updates and close the widget, and the live table if it started it."""
        if not self.closed:
            self.closed = True
            if self.owns_live:
                self.live.close()
            self._show_status()
        super().close()

    def summary(self) -> str:
        """The widget as plain text: the live table, its status, the page and its rows."""
        text, _failed = status_text(self.live.status, closed=self.closed)
        lines = [f"frameport live table · {self.page_label.value}", text]
        if self.frame is not None:
            lines.append(frame_text(self.frame))
        return "\n".join(lines)

    def _html_body(self) -> str:
        title = html.escape(f"frameport live table · {self.page_label.value}")
        return f"<p><b>{title}</b><br>{self.status_line.value}</p>{self.rows.value}"


def status_text(status: ChangesStatus, *, closed: bool) -> tuple[str, bool]:
    """The status line, and whether it tells of a failure."""
    if status.error is not None:
        return f"Ended: {describe_failure(status.error)}", True
    if closed:
        return "Closed", False
    parts = ["Polling" if status.polling else "Connected" if status.connected else "Reconnecting"]
    if status.last_event is not None:
        lag = "" if status.lag is None else f" (lag {status.lag:.1f} s)"
        parts.append(f"last event {status.last_event:%H:%M:%S} UTC{lag}")
    parts.append(f"{status.catch_ups} catch-up{'' if status.catch_ups == 1 else 's'}")
    return " · ".join(parts), False


def live_table(
    source: TableQuery | LiveTable, *, page_size: int = 20, **live_options: Any
) -> LiveTableView:
    """A view of a table's or a query's rows that updates in place as they change, with a
    status line (connected or polling, the last event and its lag, catch-ups, an error).

    Given a table or query it starts its live table (``source.live(**live_options)``: the
    options of `TableQuery.live`, such as ``poll``) and closes it when the widget is closed;
    given a `LiveTable`, it shows it and leaves it open. See the live tables guide.

    Example (a notebook cell)::

        fp.widgets.live_table(client.table("crm", "people").where(fp.col("age") > 30))
    """
    check_page_size(page_size)
    if isinstance(source, LiveTable):
        if live_options:
            raise TypeError(
                f"live_table() options {sorted(live_options)} start a live table: pass them "
                "to the query's live(), or give live_table() the query."
            )
        return LiveTableView(source, page_size=page_size)
    if not isinstance(source, TableQuery):
        raise TypeError(
            "live_table() shows a table, a query or a LiveTable (from query.live()), "
            f"not {type(source).__name__}."
        )
    live = source.live(**live_options)
    try:
        return LiveTableView(live, page_size=page_size, owns_live=True)
    except BaseException:
        live.close()
        raise
