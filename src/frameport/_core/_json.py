"""The JSON objects the service sends and takes, as the client holds them."""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

#: A JSON object: a record, a model or an answer of the service, or a body sent to it. Each
#: value is whatever JSON holds at its key, as the service's interface says.
JsonObject: TypeAlias = dict[str, Any]


def python_number(value: object) -> bool | int | float | None:
    """`value` as a Python bool, int or float when it is one, or a numpy scalar of those
    kinds (NaN and infinities kept); None for anything else.

    >>> python_number(np.int32(3)), python_number(np.bool_(True)), python_number("3")
    (3, True, None)
    """
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    return None
