"""Small HTML and text pieces the widgets share: file facts, images, tables, sizes."""

from __future__ import annotations

import base64
import html
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from .._storage import File

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
