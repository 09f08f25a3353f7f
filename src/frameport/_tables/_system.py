"""Which of the service's ``$`` fields a read shows: the `system=` argument of every read.

The service sends ``$id``, ``$sequence``, ``$createdAt``, ``$updatedAt`` and ``$permissions``
with every row. A read shows ``$id`` by default (the row's key: what `upsert`, a join or a
lookup needs); ``system=True`` shows them all, ``system=False`` none, and a name or a list
of names (with or without the ``$``) those. The read still uses the fields it needs itself
(``$sequence`` for its ranges, ``$id`` for its cursor) without showing them.

>>> system_fields("id"), system_fields(False), system_fields(["updatedAt", "$id"])
(('$id',), (), ('$id', '$updatedAt'))
"""

from __future__ import annotations

from collections.abc import Sequence

from .._schema import SYSTEM_SCHEMA

System = bool | str | Sequence[str]
"""What `system=` takes: True (every ``$`` field), False (none), or the names to show."""

DEFAULT_SYSTEM = "id"
"""What a read shows unless told otherwise: the row's ``$id``."""

ALL_SYSTEM: tuple[str, ...] = tuple(SYSTEM_SCHEMA.names)
"""Every ``$`` field the service sends with a row, in the order a read shows them."""


def system_fields(choice: System) -> tuple[str, ...]:
    """The ``$`` fields `choice` shows, in `ALL_SYSTEM`'s order; ValueError for anything else."""
    if choice is True:
        return ALL_SYSTEM
    if choice is False:
        return ()
    names = [choice] if isinstance(choice, str) else choice
    if not isinstance(names, Sequence) or not all(isinstance(name, str) for name in names):
        raise ValueError(_advice(choice))
    wanted = {name if name.startswith("$") else f"${name}" for name in names}
    unknown = sorted(wanted - set(ALL_SYSTEM))
    if unknown:
        raise ValueError(_advice(unknown[0]))
    return tuple(name for name in ALL_SYSTEM if name in wanted)


def _advice(got: object) -> str:
    names = ", ".join(name.removeprefix("$") for name in ALL_SYSTEM)
    return (
        "system= takes True (every $ field), False (none), or the names of the $ fields to "
        f"show among {names}, e.g. system=['id', 'updatedAt'] (got {got!r})."
    )
