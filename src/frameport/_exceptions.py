"""The exceptions and warnings frameport raises; every exception derives from `FrameportError`,
every warning from `FrameportWarning` (a test keeps this tree whole: each class, drawn under
its parent):

    FrameportError
    ├── FilterError (also ValueError)        a filter cannot be parsed or sent
    ├── SQLError (also ValueError)           SQL that `frameport.sql` cannot run
    ├── TransportError                       no HTTP answer: network failure, timeout
    ├── APIError                             the service answered with an error status
    │   ├── BadRequestError                  400
    │   ├── AuthenticationError              401
    │   ├── PermissionDeniedError            403
    │   ├── NotFoundError                    404
    │   ├── ConflictError                    409
    │   ├── RateLimitError                   429
    │   └── ServerError                      5xx
    ├── RowDecodeError (also ValueError)     rows cannot be turned into Arrow
    ├── ResumeError (also ValueError)        an export cannot resume from its checkpoint
    ├── SchemaChangeError (also ValueError)  a synced table's column changed type
    ├── LoadError (also ValueError)          a load cannot start (nothing written)
    ├── RowsRejectedError (also ValueError)  rows of a write that must be whole were rejected
    ├── TransactionError                     a transaction cannot take a write, or commit
    ├── FileFormatError (also ValueError)    a bucket file is not in the format it was read as
    ├── DeploymentError                      a function deployment failed or was canceled
    ├── VerificationError                    a transferred file differs from its source
    │   ├── UploadVerificationError
    │   └── DownloadVerificationError
    └── ArchiveError (also ValueError)       a backup archive cannot be used as asked

    FrameportWarning (also UserWarning)      the warnings frameport emits
    └── ImpersonationIgnoredWarning          `impersonate()` without a signed-in user

Usage mistakes (wrong argument types or combinations) raise plain `TypeError` / `ValueError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


class FrameportError(Exception):
    """Root of every error frameport raises."""

    def __reduce__(self) -> tuple[object, ...]:
        # Rebuilt without __init__ (its fields are keyword-only): the state restores them.
        return (_bare_error, (type(self), self.args), self.__dict__)


def _bare_error(cls: type[FrameportError], args: tuple[object, ...]) -> FrameportError:
    return cls.__new__(cls, *args)


class FilterError(FrameportError, ValueError):
    """A filter expression or query string cannot be parsed or sent to the service.

    `text` is the offending text and `offset` its position in the query string, when known.
    """

    def __init__(self, message: str, *, text: str | None = None, offset: int | None = None):
        super().__init__(message)
        self.text = text
        self.offset = offset


class SQLError(FrameportError, ValueError):
    """Raised by `frameport.sql` and the ``%%fpsql`` magic when the SQL cannot be run: a syntax
    error, or a table or column the statement names but was not given."""


class TransportError(FrameportError):
    """Raised when a request got no HTTP answer: the connection failed, was dropped, or timed out.

    Idempotent requests are retried first (a refused connection is not: nothing listens
    there); this is raised once the retries are used up. `method` and `url` (redacted, never
    carrying a secret) name the request, `attempts` counts the times it was sent, and `hint`
    (part of ``str(error)``) says what to check when the service could not be reached.
    """

    def __init__(
        self, message: str, *, method: str, url: str, attempts: int = 1, hint: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.method = method
        self.url = url
        self.attempts = attempts
        self.hint = hint

    def __str__(self) -> str:
        return _with_hint(self.message, self.hint)


class APIError(FrameportError):
    """Raised when the service answers with an error status that has no narrower class here.

    Attributes: `status` (HTTP status), `type` (the service's error type, e.g.
    ``"row_not_found"``), `message` (the service's message), `method` and `url` (redacted),
    and `hint` (frameport's advice on the likely cause, or None; part of ``str(error)``).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        type: str,
        method: str,
        url: str,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.method = method
        self.url = url
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.status} {self.type}: {self.message} ({self.method} {self.url})"
        return _with_hint(text, self.hint)

    def __repr__(self) -> str:
        hint = "" if self.hint is None else f", hint={self.hint!r}"
        return (
            f"{type(self).__name__}(status={self.status}, type={self.type!r}, "
            f"message={self.message!r}, method={self.method!r}, url={self.url!r}{hint})"
        )


class BadRequestError(APIError):
    """Raised on 400: the service rejected a parameter, a query or the request body."""


class AuthenticationError(APIError):
    """Raised on 401: no valid credentials (wrong password, expired or invalid JWT, missing
    scope, or a guest calling an endpoint that needs a user)."""


class PermissionDeniedError(APIError):
    """Raised on 403: the caller is known but not allowed (blocked user, JWT together with a
    session cookie, a disabled service)."""


class NotFoundError(APIError):
    """Raised on 404: the resource, route or project does not exist (or is hidden from the
    caller)."""


class ConflictError(APIError):
    """Raised on 409: the resource already exists, or a write conflicts with another one."""


class RateLimitError(APIError):
    """Raised on 429 once the retries are used up: the route's rate limit is exhausted.

    `retry_after` is the number of seconds the service asked to wait, when it said so.
    """

    def __init__(self, message: str, *, retry_after: float | None = None, **request: Any) -> None:
        super().__init__(message, **request)
        self.retry_after = retry_after


class ServerError(APIError):
    """Raised on a 5xx status once the retries are used up: the service failed."""


def endpoint_version_hint(endpoint: str) -> str:
    """The advice for a route the service does not know, at an `endpoint` without /v1."""
    return (
        f"The endpoint {endpoint} does not answer like the service; it should end in /v1 "
        f"(e.g. {endpoint.rstrip('/')}/v1)."
    )


def unknown_column(message: str, name: str, known: Iterable[str]) -> FilterError:
    """The error for the column `name` the table does not have: `message`, then the columns
    it has."""
    columns = sorted(known)
    listed = ", ".join(columns[:20]) + (", ..." if len(columns) > 20 else "")
    tail = f"; its columns are: {listed}." if columns else "."
    return FilterError(message + tail, text=name)


def unknown_key_hint(project: str) -> str:
    """The advice for a guest's refusal to a client that sent an API key: the service treats
    a key it does not know as a guest (never names the key)."""
    return (
        "The service treats an API key it does not know as a guest: check that the key is "
        f"right and belongs to project {project!r}."
    )


def missing_credentials_hint() -> str:
    """The advice for a 401 to a client that sent no credentials at all."""
    return (
        "This client sent no credentials: give an API key with Client(..., key=...) or the "
        "FRAMEPORT_KEY environment variable, or sign in with client.login(email, password)."
    )


def jwt_hint(*, refused_as_guest: bool) -> str:
    """The advice for a refused JWT: expired or invalid, or (taken as a guest) made from a
    session that has since ended (never names the JWT)."""
    cause = (
        "The service took this JWT as a guest: the session it was made from has ended"
        if refused_as_guest
        else "The JWT has expired or is not valid for this service"
    )
    return (
        f"{cause}; make a new one with create_jwt() on a signed-in client "
        "(a JWT lasts 900 s unless created with duration=, at most 3600 s)."
    )


def _with_hint(text: str, hint: str | None) -> str:
    return text if hint is None else f"{text} {hint}"


_CLASS_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitError,
}


def api_error_class(status: int) -> type[APIError]:
    """The exception class for an HTTP error status."""
    return _CLASS_BY_STATUS.get(status, ServerError if status >= 500 else APIError)


class RowDecodeError(FrameportError, ValueError):
    """Raised when rows cannot be turned into Arrow: the page body is not JSON, or a column's
    values do not fit its type (or, for an inferred schema, contradict each other).

    `column` names the offending column when there is one.
    """

    def __init__(self, message: str, *, column: str | None = None) -> None:
        super().__init__(message)
        self.column = column


class ResumeError(FrameportError, ValueError):
    """Raised when an export cannot resume from the checkpoint beside its target: the query
    is sorted on a column other than ``$sequence``, or the table, filter or columns changed
    since the checkpoint was written. The message says which; delete the checkpoint folder
    (named in the message) to start over, or export to another file."""


class SchemaChangeError(FrameportError, ValueError):
    """Raised when a synced table's column changed type at the service: `column` names it,
    `synced` and `current` are the two Arrow types. Sync into a new target to start over."""

    def __init__(self, message: str, *, column: str, synced: str, current: str) -> None:
        super().__init__(message)
        self.column = column
        self.synced = synced
        self.current = current


class LoadError(FrameportError, ValueError):
    """Raised when a load (`Table.load`, `insert`, `upsert`, ``frameport import``) cannot
    start, before anything is written: the source is of a kind frameport cannot read, has
    columns the table lacks or lacks a required one, the ID options do not fit it, or an
    atomic write cannot fit one transaction (the message gives the numbers)."""


class RowsRejectedError(FrameportError, ValueError):
    """Raised when rows of a write that must be whole were rejected, and nothing of it was
    kept: an ``atomic=True`` load (its transaction rolled back), or `insert` / `upsert`,
    which return every row's ID. `report` is the `WriteReport`, whose ``rejected`` frame
    says which rows break which rule; fix them, or `load` without ``atomic=True`` to write
    the others."""

    def __init__(self, message: str, *, report: Any) -> None:
        super().__init__(message)
        self.report = report


class TransactionError(FrameportError):
    """Raised when a transaction (`Client.transaction`) cannot take a write or cannot
    commit: a service limit (`limit` names it: ``"operations"``, the operations one
    transaction holds, or ``"ttl"``, its time to live), or a write of it that failed, after
    which it is rolled back. Nothing of the transaction is written."""

    def __init__(self, message: str, *, limit: str | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class FileFormatError(FrameportError, ValueError):
    """Raised when a file in a bucket cannot be read in the format asked for, e.g.
    `read_parquet` on a file that is not Parquet. `file_id` names the file."""

    def __init__(self, message: str, *, file_id: str) -> None:
        super().__init__(message)
        self.file_id = file_id


class DeploymentError(FrameportError):
    """A function deployment ended `failed` or `canceled`; `deployment_id`, `status` and
    `build_logs` (the service's build log) say which and why."""

    def __init__(self, message: str, *, deployment_id: str, status: str, build_logs: str):
        super().__init__(message)
        self.deployment_id = deployment_id
        self.status = status
        self.build_logs = build_logs


class VerificationError(FrameportError):
    """Raised when a transferred file differs from its source.

    `check` names the check that failed (``"chunks"``, ``"size"`` or ``"signature"``),
    `expected` and `actual` its two sides, `file_id` the file concerned.
    """

    def __init__(self, message: str, *, check: str, expected: object, actual: object, file_id: str):
        super().__init__(message)
        self.check = check
        self.expected = expected
        self.actual = actual
        self.file_id = file_id


class UploadVerificationError(VerificationError):
    """Raised when the service's final answer to an upload does not match the local source:
    not every part arrived, the size differs, or the MD5 signature differs. The bad file has
    been deleted from the bucket; upload again."""


class DownloadVerificationError(VerificationError):
    """Raised when a downloaded file's size or MD5 differs from the service's record of it.
    The partial download has been removed; download again."""


class ArchiveError(FrameportError, ValueError):
    """Raised when a backup archive cannot be used as asked: no snapshot there (or not the
    one named), a file of the snapshot missing or altered (`problems` names each file and
    what is wrong with it), or an unfinished backup there started with other choices."""

    def __init__(self, message: str, *, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = list(problems)


class FrameportWarning(UserWarning):
    """Base of the warnings frameport emits."""


class ImpersonationIgnoredWarning(FrameportWarning):
    """Emitted by `impersonate()` when the client has no signed-in user (an API key or no
    credentials): the service ignores impersonation headers for such requests."""
