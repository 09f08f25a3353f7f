"""What the widgets show: text and HTML views, shared HTML pieces, failures in plain words.

A widget's notebook output carries only a model ID, which means nothing without a running
kernel and the widget extension, so each widget also sends ``text/plain`` and ``text/html``
views; every frontend picks the richest type it can render.
"""

from __future__ import annotations

import base64
import html
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._exceptions import APIError, FrameportError, TransportError

if TYPE_CHECKING:
    from .._storage import File


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


TABLE_STYLE = "border-collapse: collapse; font-size: 0.9em"
ERROR_COLOUR = "#b00020"


def message_html(text: str, *, error: bool = False) -> str:
    """A line of status text; red for a failure."""
    colour = ERROR_COLOUR if error else "inherit"
    return f'<span style="color: {colour}">{html.escape(text)}</span>'


def human_size(size: int) -> str:
    """``1536`` → ``'1.5 KiB'``."""
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def file_facts(file: File) -> dict[str, str]:
    """What a person wants to know of a file, in display order."""
    facts = {
        "name": file.name,
        "type": file.mime_type or "unknown",
        "size": human_size(file.size),
        "id": file.id,
        "bucket": file.bucket_id,
    }
    if file.created_at is not None:
        facts["created"] = file.created_at.strftime("%Y-%m-%d %H:%M UTC")
    if not file.complete:
        facts["upload"] = f"incomplete ({file.chunks_uploaded} of {file.chunks_total} parts)"
    return facts


def facts_html(facts: dict[str, str]) -> str:
    rows = "".join(
        f'<tr><th style="text-align: left; padding-right: 1em">{html.escape(key)}</th>'
        f"<td>{html.escape(value)}</td></tr>"
        for key, value in facts.items()
    )
    return f'<table style="{TABLE_STYLE}">{rows}</table>'


def facts_text(facts: dict[str, str]) -> str:
    return "\n".join(f"{key}: {value}" for key, value in facts.items())


def image_html(data: bytes, image_format: str, *, width: int | None = None) -> str:
    """An ``<img>`` carrying its bytes (a data URL): nothing for a browser to authenticate."""
    encoded = base64.b64encode(data).decode("ascii")
    size = f' width="{width}"' if width else ""
    return f'<img src="data:image/{image_format};base64,{encoded}"{size} style="max-width: 100%">'


def frame_html(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, border=0, na_rep="null", max_cols=40)


def frame_text(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False, na_rep="null", max_cols=20)


_BY_TYPE = {
    "user_invalid_credentials": "Wrong e-mail or password.",
    "user_blocked": "This account is blocked; ask the project's administrators.",
    "user_unauthorized": "You are not allowed to do this; sign in as a user who may.",
    "general_unauthorized_scope": "You are not allowed to do this; sign in as a user who may.",
    "general_rate_limit_exceeded": "Too many attempts in a short time; wait a minute.",
    "storage_file_not_found": "There is no such file in this bucket (or you may not read it).",
    "storage_bucket_not_found": "There is no such bucket (or you may not read it).",
    "storage_file_type_unsupported": "The service cannot make a preview of this file.",
    "storage_bucket_transformations_disabled": "This bucket does not allow previews.",
}


def describe_failure(error: BaseException, *, endpoint: str = "", project: str = "") -> str:
    """What went wrong, said for a person; never a credential, never a URL with parameters.

    `endpoint` and `project` name what the user asked for, where the failure is about them.
    """
    where = f" at {endpoint}" if endpoint else ""
    if isinstance(error, TransportError):
        return (
            f"Cannot reach the service{where}: check the endpoint URL and that the service is "
            "running."
        )
    if isinstance(error, APIError):
        if error.type == "project_not_found":
            return f"There is no project {project!r}{where}."
        if error.type == "general_route_not_found":
            return f"The endpoint{where} does not answer like the service; it ends in /v1."
        return _BY_TYPE.get(error.type, f"The service refused: {error.message}")
    if isinstance(error, FrameportError | ValueError | TypeError):
        return str(error)
    return f"Unexpected failure ({type(error).__name__}): {error}"
