"""Rows ordered on the client as the service orders them (the results of several requests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc


def sort_table(table: pa.Table, order: Sequence[tuple[str, bool]]) -> pa.Table:
    """`table` ordered as the service orders rows for `order` ((column, ascending) pairs):
    nulls first when ascending and last when descending, text compared case- and
    accent-insensitively (the service's collation), ties by ``$sequence``.
    """
    keys: list[tuple[str, Literal["ascending", "descending"]]] = []
    columns: dict[str, pa.Array[Any]] = {}
    for position, (name, ascending) in enumerate(order):
        values = table.column(name).combine_chunks()
        direction: Literal["ascending", "descending"] = "ascending" if ascending else "descending"
        present = f"__present{position}"
        columns[present] = pc.is_valid(values)
        keys.append((present, direction))  # false (null) first when ascending
        sortable = f"__value{position}"
        columns[sortable] = _collation_key(values)
        keys.append((sortable, direction))
    # The service's tie-breaker: $sequence ascending, or in the direction of a leading
    # $createdAt/$updatedAt key.
    leading, leading_ascending = order[0] if order else ("", True)
    tie_ascending = leading_ascending if leading in ("$createdAt", "$updatedAt") else True
    keys.append(("$sequence", "ascending" if tie_ascending else "descending"))
    columns["$sequence"] = table.column("$sequence").combine_chunks()
    indices = pc.sort_indices(pa.table(columns), sort_keys=keys)
    return table.take(indices)


def _collation_key(values: pa.Array[Any]) -> pa.Array[Any]:
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return values
    decomposed: pa.Array[Any] = pc.utf8_normalize(values, form="NFKD")  # type: ignore[attr-defined]
    bare = pc.replace_substring_regex(decomposed, pattern=r"\p{Mn}", replacement="")
    return pc.utf8_lower(bare)
