"""Rows shown a page at a time: Previous / Next around a label, then the rows, as the table
and live table widgets show them."""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets

from ._display import StaticViews


class PagedRows(StaticViews, widgets.VBox):  # type: ignore[misc]
    """A box of `rows` (HTML) under Previous / Next buttons and a `page_label`, after the
    widgets `above`; `show_page(number)` fills them, and the buttons call it."""

    def __init__(self, above: Sequence[widgets.Widget] = ()) -> None:
        self.page_number = 0
        self.previous_button = widgets.Button(description="Previous", icon="arrow-left")
        self.next_button = widgets.Button(description="Next", icon="arrow-right")
        self.page_label = widgets.Label()
        self.rows = widgets.HTML()
        self.previous_button.on_click(lambda _button: self.show_page(self.page_number - 1))
        self.next_button.on_click(lambda _button: self.show_page(self.page_number + 1))
        controls = widgets.HBox([self.previous_button, self.page_label, self.next_button])
        super().__init__([*above, controls, self.rows])

    def show_page(self, number: int) -> None:
        """Show page `number` (0-based)."""
        raise NotImplementedError


def rows_text(start: int, shown: int, of: str) -> str:
    """The page label: ``'Rows 21–40 of 57'``, or that there are no rows (after `start`)."""
    if not shown:
        return "No rows" if start == 0 else f"No rows after row {start:,}"
    return f"Rows {start + 1:,}–{start + shown:,} of {of}"
