"""What the client commands share: one-line failures, and the connection options with their
credentials (an API key, a JWT, or the session `frameport login` saved)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._client import Client
    from .._exceptions import APIError, NotFoundError
    from .._tables._query import TableQuery


class CommandError(Exception):
    """A failure to report on one line; `code` is the exit status."""

    def __init__(self, message: object, code: int = 1) -> None:
        super().__init__(str(message))
        self.code = code


def fail(command: str, message: object, code: int = 1) -> int:
    """Say what went wrong on one line of stderr; return the exit code."""
    print(f"frameport {command}: {message}", file=sys.stderr)
    return code


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of 1 or more, got {value}")
    return value


CREDENTIALS_HELP = (
    "Credentials: FRAMEPORT_KEY or FRAMEPORT_JWT in the environment (preferred: a key on the "
    "command line is visible to other users of the machine), --key, or the session saved by "
    "`frameport login` for the endpoint and project."
)


def add_place_arguments(parser: argparse.ArgumentParser) -> None:
    """--endpoint and --project (default: FRAMEPORT_ENDPOINT, FRAMEPORT_PROJECT)."""
    parser.add_argument("--endpoint", default=None, help="default: $FRAMEPORT_ENDPOINT")
    parser.add_argument("--project", default=None, help="default: $FRAMEPORT_PROJECT")


#: What a command that changes nothing says when it is interrupted.
NOTHING_CHANGED = "nothing was changed"


@contextmanager
def client_command(
    commands: Any,
    name: str,
    job: Callable[[Connection, argparse.Namespace], str],
    *,
    kept: str | Callable[[argparse.Namespace], str] = NOTHING_CHANGED,
    help: str,
    description: str,
) -> Iterator[argparse.ArgumentParser]:
    """A subcommand running `job` with a client (see `run_with_client`); `kept` (or
    `kept(args)`) says what an interruption leaves behind. The `with` block adds the
    command's own arguments; --no-progress (``args.progress``: False or None), --endpoint,
    --project and --key come after them."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=help, description=f"{description} {CREDENTIALS_HELP}"
    )
    parser.set_defaults(run=partial(run_with_client, name, job, kept))
    yield parser
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action="store_const",
        const=False,
        default=None,
        help="no progress bar",
    )
    add_place_arguments(parser)
    parser.add_argument("--key", default=None, help="default: $FRAMEPORT_KEY")


def place(args: argparse.Namespace) -> tuple[str, str]:
    """The endpoint and project of the command line or the environment."""
    from .._core import ENDPOINT_ENV, PROJECT_ENV

    endpoint = args.endpoint or os.environ.get(ENDPOINT_ENV)
    project = args.project or os.environ.get(PROJECT_ENV)
    if not endpoint or not project:
        raise CommandError(
            f"give --endpoint and --project, or set {ENDPOINT_ENV} and {PROJECT_ENV}",
            code=2,
        )
    return endpoint, project


class Connection:
    """The client a command works with, and where its credential came from (for advice when
    the service refuses it)."""

    def __init__(self, args: argparse.Namespace) -> None:
        from .._client import Client
        from .._core import credentials_from_env, load_session

        self.endpoint, self.project = place(args)
        given = getattr(args, "key", None)
        key, jwt = (given, None) if given else credentials_from_env()
        client = Client(self.endpoint, self.project, key=key, jwt=jwt)
        self.source: str | None = (
            "--key / FRAMEPORT_KEY" if key else "FRAMEPORT_JWT" if jwt else None
        )
        if self.source is None and load_session(client.endpoint, self.project) is not None:
            client.close()
            client = Client.from_saved(self.endpoint, self.project)
            self.source = "the session saved by `frameport login`"
        self.client: Client = client

    def refused(self, error: APIError) -> str:
        """`error` (the service refused the credential) with what to check."""
        from .._core import JWT_ENV, KEY_ENV

        shown = str(error)
        if self.source is None:  # the options of the command, not those of Python's client
            shown = shown.removesuffix(f" {error.hint}")
            hint = (
                f"give an API key with --key or {KEY_ENV} (or a JWT in {JWT_ENV}), or sign in "
                "with `frameport login`"
            )
        elif error.hint is not None:  # the client already said what to check
            hint = f"the credential came from {self.source}"
        else:
            hint = f"check that {self.source} holds a valid credential for project "
            hint += repr(self.project)
        return f"{shown.rstrip('.')}; {hint}."


def system_option(text: str) -> bool | list[str]:
    """``--system``: ``all``, ``none``, or $ field names separated by commas."""
    from .._tables import system_fields

    keyword = {"all": True, "none": False}.get(text.strip().lower())
    choice = [n.strip() for n in text.split(",") if n.strip()] if keyword is None else keyword
    try:
        system_fields(choice)
    except ValueError:
        names = ", ".join(name.removeprefix("$") for name in system_fields(True))
        raise argparse.ArgumentTypeError(
            f"expected all, none, or names among {names} separated by commas (got {text!r})"
        ) from None
    return choice


def add_system_argument(parser: argparse.ArgumentParser) -> None:
    """--system: which $ fields the rows show (default: $id)."""
    parser.add_argument(
        "--system",
        type=system_option,
        default="id",
        metavar="FIELDS",
        help="the $ fields to include: all, none, or names such as id,updatedAt (default: id)",
    )


def add_view_arguments(parser: argparse.ArgumentParser, *, columns: str | None) -> None:
    """DB and TABLE, --where, --columns (unless `columns`, what they do, is None) and
    --collection."""
    parser.add_argument("db", help="the database ID")
    parser.add_argument("table", help="the table ID")
    parser.add_argument("--where", default=None, help='a filter, e.g. "age > 30"')
    if columns is not None:
        parser.add_argument("--columns", default=None, help=columns)
    parser.add_argument("--collection", action="store_true", help="use the legacy interface")


def view_from_args(connection: Connection, args: argparse.Namespace) -> TableQuery:
    client = connection.client
    table = (client.collection if args.collection else client.table)(args.db, args.table)
    query = table.query(args.where, local_dict={}) if args.where else table
    if getattr(args, "columns", None):
        query = query.select(*[c.strip() for c in args.columns.split(",") if c.strip()])
    return query


def _what_exists(connection: Connection, args: argparse.Namespace, error: NotFoundError) -> str:
    """For a database or table that is not there, the ones that are (when they can be
    listed), as the end of the error's line."""
    from .._exceptions import FrameportError

    client = connection.client
    try:
        if error.type == "database_not_found":
            found = client.databases()["$id"].tolist()
            return f"; the databases are: {', '.join(found) or 'none'}."
        if error.type == "table_not_found" and getattr(args, "db", None):
            found = client.tables(args.db)["$id"].tolist()
            return f"; the tables of {args.db} are: {', '.join(found) or 'none'}."
    except FrameportError:  # e.g. a signed-in user, who may not list them
        pass
    return "."


def reported(command: str, work: Callable[[], str], interrupted: str | None = None) -> int:
    """Print what `work` says, or one line saying what went wrong: exit 2 for bad input (a
    usage mistake, a filter or a column that does not fit the table), 1 for a failed
    operation (the service refused, the network failed), 130 on Ctrl-C, saying what the
    interruption left (`interrupted`) when given."""
    from .._exceptions import FilterError, FrameportError, LoadError

    try:
        said = work()
    except CommandError as exc:
        return fail(command, exc, exc.code)
    except (FilterError, LoadError) as exc:
        return fail(command, exc, 2)
    except (FrameportError, OSError) as exc:
        return fail(command, exc)
    except (ValueError, EOFError) as exc:  # e.g. not a URL; no answer on standard input
        return fail(command, str(exc) or "no input", 2)
    except KeyboardInterrupt:
        if interrupted is None:
            return 130
        return fail(command, f"interrupted; {interrupted}", 130)
    if said:
        print(said)
    return 0


def run_with_client(
    command: str,
    job: Callable[[Connection, argparse.Namespace], str],
    kept: str | Callable[[argparse.Namespace], str],
    args: argparse.Namespace,
) -> int:
    """Run `job` with the command's client and `args` (see `reported`); `kept` says what an
    interruption leaves; a refused credential or a missing table says what to check."""
    from .._exceptions import AuthenticationError, NotFoundError, PermissionDeniedError

    def work() -> str:
        connection = Connection(args)
        with connection.client:
            try:
                return job(connection, args)
            except (AuthenticationError, PermissionDeniedError) as exc:
                raise CommandError(connection.refused(exc)) from exc
            except NotFoundError as exc:
                found = _what_exists(connection, args, exc)
                raise CommandError(f"{str(exc).rstrip('.')}{found}") from exc

    return reported(command, work, kept if isinstance(kept, str) else kept(args))
