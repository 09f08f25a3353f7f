"""What a frameport widget shows where ipywidgets cannot render it.

A notebook output of a widget carries only a model ID, which means nothing without a running
kernel and the widget extension (a saved notebook on a web page, an editor without
ipywidgets). Every frontend picks the richest type it can render from the same output, so each
widget also sends ``text/plain`` and ``text/html`` views of what it shows.
"""

from __future__ import annotations

import html
from typing import Any


class StaticViews:
    """Mixin for an ipywidgets box: `summary` is the text view, `to_html` the HTML view.

    Put it first among the bases (``class FilePreview(StaticViews, widgets.VBox)``) so its
    `_repr_mimebundle_` wraps the widget's own.
    """

    def summary(self) -> str:
        """One or a few lines saying what the widget shows."""
        raise NotImplementedError

    def _html_body(self) -> str:
        """The HTML view's content; the default is the escaped summary."""
        return f"<pre>{html.escape(self.summary())}</pre>"

    def to_html(self) -> str:
        """The HTML a notebook shows for the widget where ipywidgets cannot render it (a
        saved notebook on a web page, an editor without the widget extension)."""
        return f'<div class="frameport-widget">{self._html_body()}</div>'

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = dict(super()._repr_mimebundle_(**kwargs) or {})  # type: ignore[misc]
        bundle["text/plain"] = self.summary()
        bundle["text/html"] = self.to_html()
        return bundle

    def __repr__(self) -> str:
        # ipywidgets' repr lists every trait of every child; the summary says what matters.
        return f"<{type(self).__name__}: {self.summary()}>"
