"""Row IDs of a load: from a key column, from a stable hash of key columns, or made for it.

* ``id_from="sku"`` — the column's values are the IDs (each must be a valid ID: 1 to 36
  characters of ``a-z A-Z 0-9 . - _``, starting with a letter or digit); a row whose value is
  not one is rejected (rule ``id``).
* ``id_hash=["email"]`` (in `IdFrom`, a list) — the ID is the BLAKE2b hash (16 bytes, 32
  hex digits) of the row's key values written as one JSON array (``["ada@example.com"]``),
  after they are converted to the table's column types. The same key gives the same ID from
  any source: ``42`` read from a CSV file and ``42`` in a pandas frame hash alike, and a
  rerun meets the rows it wrote before instead of duplicating them.
* neither — the source's ``$id`` column where it has one, else IDs made for the load:
  the load's run ID (16 hex digits, kept in the checkpoint with ``resume=True``) and the
  row's position in the source (12 hex digits), so a resumed load gives each row the ID the
  killed one gave it.

>>> hashed_ids(pa.record_batch({"email": ["ada@example.com"]}), ["email"]).to_pylist()
['93e2150b75be2c5ba9cf189a7ea33d53']
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..._core._ids import ID_RULE
from ..._schema import batch_to_rows

ID_COLUMN = "$id"
VALID_ID = r"^[a-zA-Z0-9][a-zA-Z0-9._-]{0,35}$"
IdFrom = str | Sequence[str] | None


def id_keys(id_from: IdFrom) -> list[str]:
    """The key columns `id_from` names."""
    return [id_from] if isinstance(id_from, str) else list(id_from or ())


def hashed_ids(batch: pa.RecordBatch, keys: Sequence[str]) -> pa.StringArray:
    """The stable hash IDs of the rows of `batch`, from its `keys` columns."""
    rows = batch_to_rows(batch.select(list(keys)))
    digests = [_digest([row[key] for key in keys]) for row in rows]
    return pa.array(digests, pa.string())


def _digest(values: list[object]) -> str:
    text = json.dumps(values, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def positional_ids(run_id: str, positions: Iterable[int]) -> pa.StringArray:
    """IDs made for the rows at `positions` of the source of the load `run_id`."""
    return pa.array([f"{run_id}{int(position):012x}" for position in positions], pa.string())


def column_ids(values: Any) -> tuple[Any, Any]:
    """A key column's values as IDs, and the mask of values that cannot be IDs."""
    values = values.cast(pa.string())
    valid = pc.fill_null(pc.match_substring_regex(values, VALID_ID), False)
    return values, pc.invert(valid)


ID_MESSAGE = f"not an ID: an ID has {ID_RULE}"
