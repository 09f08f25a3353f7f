"""The options of the ``frameport`` Spark source, read and checked where Spark hands them over
(a case-insensitive mapping of strings): where the table is, what to read of it, and the
credentials.

Decisions:

* Credentials come from the options ``api_key_secret`` (an API key) or ``jwt_token`` (a
  user's JWT), names Spark's default ``spark.redaction.regex`` redacts wherever it shows
  options, or else from FRAMEPORT_KEY / FRAMEPORT_JWT in the environment of the process that
  reads them (the driver's Python workers and the executors' alike). Option names Spark would
  show in clear (``key``, ``api_key``, ``jwt``...) are refused, without echoing their value.
* A missing or unknown option, a malformed ``query``, ``partitions`` or ``page_size`` raise
  ValueError (FilterError for the query) naming the option and what to pass, on the driver,
  before any task runs. Sources that take more options (a writer's) name them in `extra`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...._core import Connection, connect, credentials_from_env
from ...._core._auth import Secret
from ...._expr import Expr, parse
from ..._location import TableLocation

REQUIRED = ("endpoint", "project", "database", "table")
CREDENTIAL_OPTIONS = ("api_key_secret", "jwt_token")
READ_OPTIONS = ("query", "columns", "partitions", "page_size")
# Names a user may reach for that Spark would print in clear in plans and the UI.
_CLEAR_CREDENTIAL_NAMES = frozenset(
    {"key", "api_key", "apikey", "api-key", "jwt", "secret_key", "credentials"}
)
SOURCE_NAME = "frameport"


@dataclass(frozen=True)
class SourceOptions:
    """The checked options of one read (or write) of the ``frameport`` source; picklable,
    and its repr never shows the credentials."""

    endpoint: str
    project: str
    location: TableLocation
    query: Expr | None = None
    columns: tuple[str, ...] | None = None
    partitions: int | None = None
    page_size: int | None = None
    key: Secret | None = field(default=None, repr=False)
    jwt: Secret | None = field(default=None, repr=False)
    extra: Mapping[str, str] = field(default_factory=dict)

    def connect(self) -> Connection:
        """A connection with these options' credentials, else the environment's (close it
        with ``aclose``)."""
        key = self.key.reveal() if self.key is not None else None
        jwt = self.jwt.reveal() if self.jwt is not None else None
        if key is None and jwt is None:
            key, jwt = credentials_from_env()
        return connect(self.endpoint, self.project, key=key, jwt=jwt)


def source_options(options: Mapping[str, str], extra: Iterable[str] = ()) -> SourceOptions:
    """The checked `options` Spark passed to the source (names in any case); `extra` names
    the further options a caller accepts, kept as given in ``SourceOptions.extra``."""
    given = {name.lower(): value for name, value in options.items()}
    allowed = {*REQUIRED, *CREDENTIAL_OPTIONS, *READ_OPTIONS, *extra}
    for name in given:
        if name in _CLEAR_CREDENTIAL_NAMES:
            raise ValueError(
                f"The {SOURCE_NAME} source takes no option {name!r}: Spark would show its "
                "value in plans and its UI. Pass an API key as .option('api_key_secret', ...) "
                "or a JWT as .option('jwt_token', ...), names Spark redacts, or set "
                "FRAMEPORT_KEY where the driver and the executors start."
            )
        if name not in allowed:
            raise ValueError(
                f"The {SOURCE_NAME} source has no option {name!r}; its options are "
                f"{', '.join(sorted(allowed))}."
            )
    missing = [name for name in REQUIRED if not given.get(name, "").strip()]
    if missing:
        raise ValueError(
            f"The {SOURCE_NAME} source needs the option{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(repr, missing))}: "
            + "".join(f'.option("{name}", ...)' for name in missing)
            + " after spark.read.format('frameport')."
        )
    if given.get("api_key_secret") and given.get("jwt_token"):
        raise ValueError("Pass either api_key_secret (an API key) or jwt_token, not both.")
    return SourceOptions(
        endpoint=given["endpoint"].strip(),
        project=given["project"].strip(),
        location=_location(given["database"].strip(), given["table"].strip()),
        query=parse(given["query"]) if given.get("query", "").strip() else None,
        columns=_columns(given.get("columns")),
        partitions=_whole_number(given, "partitions"),
        page_size=_whole_number(given, "page_size"),
        key=_secret(given.get("api_key_secret")),
        jwt=_secret(given.get("jwt_token")),
        extra={name: value for name, value in given.items() if name in set(extra)},
    )


def _location(database: str, table: str) -> TableLocation:
    try:
        return TableLocation(database, table)
    except ValueError as exc:
        raise ValueError(f"The options database and table must name a table: {exc}") from exc


def _columns(text: str | None) -> tuple[str, ...] | None:
    if text is None or not text.strip():
        return None
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _whole_number(given: Mapping[str, str], name: str) -> int | None:
    text = given.get(name, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"The option {name!r} must be a whole number >= 1 (got {text!r}).")
    return int(text)


def _secret(value: str | None) -> Secret | None:
    return Secret(value) if value else None
