"""Request parameters: the query string and the body merged, with the service's validators.

Array parameters use bracket syntax in query strings and forms (`queries[]=a&queries[]=b` or
`queries[0]=a&queries[1]=b`); JSON bodies carry them as arrays. Booleans are loose: the strings
`true`/`false`/`1`/`0` are accepted as well as JSON booleans.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterable, Mapping
from typing import Any

from . import _json as request_json
from ._errors import invalid_param, missing_param

UNIQUE = "unique()"
_UID = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{0,35}$")
_BRACKET = re.compile(r"^(?P<name>[^\[\]]+)\[(?P<index>\d*)\]$")
_NESTED_KEY = re.compile(r"(?P<name>[^\[\]]+)(?P<path>(?:\[[^\[\]]*\])*)")
_KEY_PART = re.compile(r"\[([^\[\]]*)\]")
UID_DESCRIPTION = (
    "Parameter must contain at most 36 chars. Valid chars are a-z, A-Z, 0-9, period, hyphen, "
    "and underscore. Can't start with a special char"
)


#: The largest integer the service holds (64-bit); a longer number in a header reads as this.
INT64_MAX = 2**63 - 1


def header_integer(digits: str) -> int:
    """A run of ASCII digits from a header, read as the service reads it: a 64-bit integer,
    so a number past the largest one is that largest one (never Python's 4300-digit error).

    >>> header_integer("42"), header_integer("9" * 5000) == INT64_MAX
    (42, True)
    """
    digits = digits.lstrip("0") or "0"
    return INT64_MAX if len(digits) > len(str(INT64_MAX)) else min(int(digits), INT64_MAX)


def unique_id() -> str:
    """A new ID as the service makes them: 13 hex digits of time, then 7 random hex digits."""
    now = time.time()
    seconds = int(now)
    micros = int((now - seconds) * 1_000_000)
    return f"{seconds:08x}{micros:05x}{secrets.token_hex(4)[:7]}"


def is_uid(value: object) -> bool:
    """Whether `value` is a valid ID: 1..36 of a-z A-Z 0-9 . - _, not starting with . - _."""
    return isinstance(value, str) and _UID.match(value) is not None


def check_path_ids(path: Mapping[str, str]) -> None:
    """400 `general_argument_invalid` for a path parameter that breaks the ID rule
    (service interface, "IDs").

    Every path parameter of the service names something by its ID or key (`current` and
    `recent` are valid IDs too), so every one is checked, before the handler runs.
    """
    for name, value in path.items():
        if not is_uid(value):
            raise invalid_param(name, UID_DESCRIPTION)


def merge_bracket_pairs(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Fold `name[]=v` / `name[3]=v` pairs into lists; a plain name keeps its last value."""
    merged: dict[str, Any] = {}
    indexed: dict[str, list[tuple[int, int, Any]]] = {}
    for position, (key, value) in enumerate(pairs):
        match = _BRACKET.match(key)
        if match is None:
            merged[key] = value
            continue
        index = match.group("index")
        order = int(index) if index else position
        indexed.setdefault(match.group("name"), []).append((order, position, value))
    for name, items in indexed.items():
        merged[name] = [value for _, _, value in sorted(items, key=lambda item: item[:2])]
    return merged


def nested_bracket_params(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Query-string pairs read as the service's language reads them: `a[x][]=v` nests to
    any depth, `[]` appends at the next integer key, digit keys are integers, and `.` or a
    space in a name becomes `_`. Nested levels are dicts in arrival order.

    >>> nested_bracket_params([("a.b[0][]", "q1"), ("a.b[0][]", "q2"), ("c[]", "x")])
    {'a_b': {0: {0: 'q1', 1: 'q2'}}, 'c': {0: 'x'}}
    """
    result: dict[Any, Any] = {}
    for key, value in pairs:
        match = _NESTED_KEY.fullmatch(key)
        if match is None:
            continue
        container: dict[Any, Any] = result
        slot: Any = match.group("name").replace(".", "_").replace(" ", "_")
        for part in _KEY_PART.findall(match.group("path")):
            child = container.get(slot)
            if not isinstance(child, dict):
                child = container[slot] = {}
            container = child
            if part == "":
                slot = max((k + 1 for k in container if isinstance(k, int)), default=0)
            else:
                slot = int(part) if part.isdigit() else part
        container[slot] = value
    return result


class Params:
    """Typed access to the merged parameters of one request, raising the service's 400s."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = dict(data)

    def has(self, name: str) -> bool:
        return name in self.data and self.data[name] is not None

    def raw(self, name: str, default: Any = None) -> Any:
        return self.data.get(name, default)

    def _present(self, name: str, required: bool) -> bool:
        if self.has(name):
            return True
        if required:
            raise missing_param(name)
        return False

    def string(
        self,
        name: str,
        *,
        required: bool = False,
        default: str | None = None,
        max_length: int | None = None,
        min_length: int = 0,
    ) -> str | None:
        if not self._present(name, required):
            return default
        value = self.data[name]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if (
            not isinstance(value, str)
            or len(value) < min_length
            or (max_length is not None and len(value) > max_length)
        ):
            limit = f" and no longer than {max_length} chars" if max_length else ""
            raise invalid_param(
                name, f"Value must be a valid string and at least {min_length} chars{limit}"
            )
        return value

    def required_string(self, name: str, *, max_length: int | None = None) -> str:
        value = self.string(name, required=True, max_length=max_length)
        assert value is not None  # guaranteed by required=True
        return value

    def uid(self, name: str, *, allow_unique: bool = True) -> str:
        """A required ID parameter; `unique()` becomes a generated ID when allowed."""
        value = self.data.get(name)
        if value is None:
            raise missing_param(name)
        if allow_unique and value == UNIQUE:
            return unique_id()
        if not is_uid(value):
            raise invalid_param(name, UID_DESCRIPTION)
        return str(value)

    def boolean(self, name: str, default: bool = False, *, required: bool = False) -> bool:
        if not self._present(name, required):
            return default
        value = self.data[name]
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "false", "0"):
            return value.lower() in ("true", "1")
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise invalid_param(name, "Value must be a valid boolean")

    def integer(
        self,
        name: str,
        default: int | None = None,
        *,
        minimum: int | None = None,
        maximum: int | None = None,
        required: bool = False,
    ) -> int | None:
        if not self._present(name, required):
            return default
        value = self.data[name]
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise invalid_param(name, "Value must be a valid integer")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise invalid_param(
                name, f"Value must be a valid range between {minimum:,} and {maximum:,}"
            )
        return value

    def number(self, name: str, default: float | None = None) -> float | None:
        if not self._present(name, False):
            return default
        value = self.data[name]
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise invalid_param(name, "Value must be a valid float") from None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise invalid_param(name, "Value must be a valid float")
        return float(value)

    def string_list(
        self,
        name: str,
        *,
        max_items: int = 100,
        max_length: int | None = None,
        required: bool = False,
    ) -> list[str] | None:
        if not self._present(name, required):
            return None
        value = self.data[name]
        if isinstance(value, str):
            decoded = request_json.loads_text(value)
            value = decoded if isinstance(decoded, list) else [value]
        if not isinstance(value, list) or len(value) > max_items:
            raise invalid_param(
                name, f"Value must be a valid array no longer than {max_items} items"
            )
        for item in value:
            if not isinstance(item, str) or (max_length is not None and len(item) > max_length):
                limit = f" and no longer than {max_length} chars" if max_length else ""
                raise invalid_param(
                    name,
                    f"Value must be a valid array no longer than {max_items} items "
                    f"and Value must be a valid string{limit}",
                )
        return list(value)

    def permission_strings(self, name: str = "permissions") -> list[str] | None:
        """A permissions array of at most 100 strings; None when not sent. Text is not read
        as an array here: a permission sent as a string is 400, as the service answers."""
        if self.has(name) and not isinstance(self.data[name], list):
            raise invalid_param(name, "Value must be a valid array no longer than 100 items")
        return self.string_list(name, max_items=100)

    def queries(self) -> list[str]:
        """The `queries` parameter: at most 100 strings of at most 4096 characters each."""
        return self.string_list("queries", max_items=100, max_length=4096) or []

    def json_object(self, name: str, *, required: bool = False) -> dict[str, Any] | None:
        """A JSON object, sent as an object or as a JSON string."""
        if not self._present(name, required):
            return None
        value = request_json.loads_text(self.data[name])
        if not isinstance(value, dict):
            raise invalid_param(name, "Value must be a valid JSON object")
        return value
