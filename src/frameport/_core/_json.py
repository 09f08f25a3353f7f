"""The JSON objects the service sends and takes, as the client holds them."""

from __future__ import annotations

from typing import Any, TypeAlias

#: A JSON object: a record, a model or an answer of the service, or a body sent to it. Each
#: value is whatever JSON holds at its key, as the service's interface says.
JsonObject: TypeAlias = dict[str, Any]
