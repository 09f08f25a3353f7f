"""A griffe extension for the API reference: the ``>>>`` examples of a docstring are shown as
Python console blocks (fenced ``pycon``), without their ``# doctest:`` directives."""

from __future__ import annotations

import re
from typing import Any

import griffe

DIRECTIVE = re.compile(r"\s*#\s*doctest:.*$")


def fence_examples(text: str) -> str:
    """`text` with each run of ``>>>``/``...`` lines (and their output) in a pycon fence."""
    out: list[str] = []
    in_example = False
    for line in text.splitlines():
        stripped = line.strip()
        starts = stripped.startswith(">>>")
        if starts and not in_example:
            out.append("```pycon")
            in_example = True
        elif in_example and not stripped:
            out.append("```")
            in_example = False
        out.append(DIRECTIVE.sub("", line.strip()) if in_example else line)
    if in_example:
        out.append("```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fences the examples of every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_examples(obj.docstring.value)
