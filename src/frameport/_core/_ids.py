"""IDs made and checked on the client, in the service's format.

>>> len(ID.unique())
20
>>> ID.custom("invoice-2024.01")
'invoice-2024.01'
"""

from __future__ import annotations

import re
import secrets
import threading
import time

_ID_PATTERN = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{0,35}")
ID_RULE = "1 to 36 characters from a-z, A-Z, 0-9, '.', '-' and '_', starting with a letter or digit"
"""The service's rule for IDs, which column keys follow too, as a sentence."""


def is_valid_id(text: object) -> bool:
    """Whether `text` is a string the service takes as an ID (or a column key)."""
    return isinstance(text, str) and _ID_PATTERN.fullmatch(text) is not None


_MICROS_PER_SECOND = 1_000_000


_last_micros = 0
_micros_lock = threading.Lock()


def _next_micros() -> int:
    """Microseconds since the epoch, strictly increasing within this process."""
    global _last_micros
    with _micros_lock:
        _last_micros = max(time.time_ns() // 1000, _last_micros + 1)
        return _last_micros


class ID:
    """Row, file, user and team IDs.

    `ID.unique()` makes a new ID without asking the service, so a create request can be
    retried safely; `ID.custom(text)` checks a chosen ID against the service's rule.
    """

    @staticmethod
    def unique() -> str:
        """A new 20-character ID: 13 hex digits of time, then 7 random hex digits.

        IDs made later compare greater (as strings) than IDs made earlier in this process.
        """
        seconds, fraction = divmod(_next_micros(), _MICROS_PER_SECOND)
        return f"{seconds:08x}{fraction:05x}{secrets.token_hex(4)[:7]}"

    @staticmethod
    def custom(id: str) -> str:
        """Return `id` if the service accepts it as an ID, else raise ValueError.

        The rule: 1 to 36 characters from ``a-z A-Z 0-9 . - _``, not starting with
        ``.``, ``-`` or ``_``.
        """
        if not isinstance(id, str):
            raise TypeError(f"An ID is a string; got {type(id).__name__}.")
        if not is_valid_id(id):
            raise ValueError(f"{id!r} is not a valid ID: use {ID_RULE} (or call ID.unique()).")
        return id
