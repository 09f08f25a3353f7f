"""`frameport login` and `frameport logout`: a saved session for the other commands.

The password is read from the terminal without echo (or from standard input with
``--password-stdin``), never from an option: options are visible to other users of the
machine and stay in shell history.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from functools import partial
from typing import Any

from ._common import CommandError, add_place_arguments, place, reported


def add_login_commands(commands: Any) -> None:
    login = commands.add_parser(
        "login",
        help="sign in with e-mail and password and save the session for later commands",
        description="Sign in and save the session (not the password) in frameport's "
        "credential file; export and upload then use it when no key is given, and "
        "Client.from_saved(endpoint, project) gives a client with it.",
    )
    login.add_argument("--email", default=None, help="the account's e-mail (default: asked)")
    login.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input (for scripts)",
    )
    add_place_arguments(login)
    login.set_defaults(run=lambda args: reported("login", partial(_login, args)))
    logout = commands.add_parser(
        "logout", help="end the session `frameport login` saved, and forget it"
    )
    add_place_arguments(logout)
    logout.set_defaults(run=lambda args: reported("logout", partial(_logout, args)))


def _login(args: argparse.Namespace) -> str:
    from .._client import Client
    from .._exceptions import AuthenticationError

    endpoint, project = place(args)
    email = args.email or input("e-mail: ").strip()
    password = _password(args.password_stdin)
    with Client(endpoint, project) as client:
        try:
            client.login(email, password, save=True)
            account = client.account()
        except AuthenticationError as exc:
            raise CommandError(f"{str(exc).rstrip('.')}; check the e-mail and password") from exc
    who = account.get("name") or account.get("email") or email
    return f"signed in as {who}; the session is saved for project {project!r} at {endpoint}"


def _password(from_stdin: bool) -> str:
    if from_stdin:
        line = sys.stdin.readline()
        if not line:
            raise CommandError("--password-stdin: standard input is empty", code=2)
        return line.rstrip("\r\n")
    if not sys.stdin.isatty():
        raise CommandError(
            "cannot ask for the password without a terminal; use --password-stdin", code=2
        )
    return getpass.getpass("password: ")


def _logout(args: argparse.Namespace) -> str:
    from .._client import Client
    from .._core import load_session, normalized_endpoint

    endpoint, project = place(args)
    if load_session(normalized_endpoint(endpoint), project) is None:
        raise CommandError(
            f"no session is saved for project {project!r} at {endpoint}; "
            "sign in with `frameport login`"
        )
    with Client.from_saved(endpoint, project) as client:
        client.logout()
    return f"signed out; the saved session for project {project!r} at {endpoint} is gone"
