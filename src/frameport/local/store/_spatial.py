"""Spatial column values: a point `[x, y]`, a line (a list of points), a polygon (a list of
rings, each a closed list of at least four points).

A value is checked and stored as its canonical JSON text, so equal geometries store equal
text (`equal`/`notEqual` compare that text).

>>> geometry_text("line", [[0, 0], [1, 2.5]])
'[[0,0],[1,2.5]]'
"""

from __future__ import annotations

import json
import math
from typing import Any

SPATIAL_TYPES = ("point", "line", "polygon")

_SHAPES = {
    "point": "Value must be a valid point: [x, y] with two finite numbers",
    "line": "Value must be a valid line: a list of at least two points [x, y]",
    "polygon": (
        "Value must be a valid polygon: a list of rings, each a closed list of at least four "
        "points [x, y] whose first and last points are equal"
    ),
}


class InvalidGeometry(ValueError):
    """The value is not a geometry of the column's type; the message says what is expected."""


def geometry_text(kind: str, value: Any) -> str:
    """The canonical JSON text of a `kind` geometry; InvalidGeometry when it is not one."""
    if not _fits(kind, value):
        raise InvalidGeometry(_SHAPES[kind])
    return json.dumps(value, separators=(",", ":"))


def _fits(kind: str, value: Any) -> bool:
    if kind == "point":
        return _is_point(value)
    if kind == "line":
        return isinstance(value, list) and len(value) >= 2 and all(map(_is_point, value))
    return isinstance(value, list) and len(value) >= 1 and all(map(_is_ring, value))


def _is_point(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(
            isinstance(n, (int, float)) and not isinstance(n, bool) and _finite(n) for n in value
        )
    )


def _finite(number: int | float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an integer beyond the float range
        return False


def _is_ring(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) >= 4
        and all(map(_is_point, value))
        and value[0] == value[-1]
    )
