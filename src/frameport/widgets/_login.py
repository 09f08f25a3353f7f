"""`login`: a sign-in form whose password lives in the kernel only as long as it is read."""

from __future__ import annotations

import html
import os
from functools import partial

import ipywidgets as widgets

from .._client import Client
from .._core import ENDPOINT_ENV, PROJECT_ENV
from .._core._json import JsonObject
from .._exceptions import AuthenticationError, FrameportError
from ._display import StaticViews, describe_failure, message_html

_FIELD_LAYOUT = {"width": "28em"}


class LoginForm(StaticViews, widgets.VBox):  # type: ignore[misc]
    """Endpoint, project, e-mail and password, with Log in / Log out and "Remember me".

    `client` is the `Client` the form signs in: the given client, or a new one when the
    endpoint or project typed in differs from the given client's or when the given client
    holds an API key or a JWT (which stays as it was); `account` is the signed-in user's
    record, or None.
    The password is taken out of the password field as soon as it is read, so it is in no
    widget state (and no saved notebook). "Remember me" saves the session cookie (not the
    password) in frameport's credential file; a later form for the same endpoint and project
    starts signed in.
    """

    def __init__(
        self, client: Client | None = None, endpoint: str | None = None, project: str | None = None
    ) -> None:
        self.client: Client | None = client
        self.account: JsonObject | None = None
        self._owns_client = False
        endpoint = endpoint or (client.endpoint if client else os.environ.get(ENDPOINT_ENV))
        project = project or (client.project if client else os.environ.get(PROJECT_ENV))
        style = {"description_width": "6em"}
        text = partial(widgets.Text, style=style, layout=_FIELD_LAYOUT)
        self.endpoint_field = text(
            value=endpoint or "", description="Endpoint", placeholder="http://127.0.0.1:8080/v1"
        )
        self.project_field = text(value=project or "", description="Project")
        self.email_field = text(description="E-mail", placeholder="you@example.org")
        self.password_field = widgets.Password(
            description="Password", style=style, layout=_FIELD_LAYOUT
        )
        self.remember_box = widgets.Checkbox(
            value=False, description="Remember me", indent=False, style=style
        )
        self.login_button = widgets.Button(description="Log in", button_style="primary")
        self.logout_button = widgets.Button(description="Log out")
        self.status = widgets.HTML()
        self._form = widgets.VBox(
            [
                self.endpoint_field,
                self.project_field,
                self.email_field,
                self.password_field,
                widgets.HBox([self.remember_box, self.login_button]),
            ]
        )
        self.login_button.on_click(lambda _button: self.log_in())
        self.logout_button.on_click(lambda _button: self.log_out())
        super().__init__([self._form, self.status, self.logout_button])
        self.add_class("frameport-login")
        self._resume_session()
        self._show_state()

    def log_in(self) -> None:
        """Sign in with the e-mail and password in the form (the "Log in" button)."""
        password = self.password_field.value
        self.password_field.value = ""
        email = self.email_field.value.strip()
        if not email or not password:
            self._say("Enter your e-mail and password.", error=True)
            return
        self._say("Signing in…")
        try:
            client = self._client_for_form()
            client.login(email, password, save=self.remember_box.value)
            self.account = client.account()
        except (FrameportError, ValueError, TypeError) as exc:
            self._say(self._failure(exc), error=True)
            return
        self._show_state()
        self._say(f"Signed in as {self._who()}.")

    def log_out(self) -> None:
        """End the session (the "Log out" button); a remembered session is forgotten too."""
        if self.client is None or self.account is None:
            return
        try:
            self.client.logout()
        except (FrameportError, ValueError) as exc:
            self._say(self._failure(exc), error=True)
            return
        self.account = None
        self._show_state()
        self._say("Signed out.")

    @property
    def signed_in(self) -> bool:
        """Whether the form's client holds a signed-in user."""
        return self.account is not None

    def _client_for_form(self) -> Client:
        """The client for the endpoint and project in the form, made anew when they changed
        or when the form's client authenticates with a key or JWT (it cannot sign in)."""
        endpoint = self.endpoint_field.value.strip()
        project = self.project_field.value.strip()
        if not endpoint or not project:
            raise ValueError("Enter the endpoint URL and the project ID.")
        current = self.client
        same_place = current is not None and (current.endpoint, current.project) == (
            endpoint.rstrip("/"),
            project,
        )
        if current is not None and same_place and current.authentication in (None, "session"):
            return current
        client = Client(endpoint, project)
        if current is not None and self._owns_client:
            current.close()
        self.client, self._owns_client = client, True
        return client

    def _resume_session(self) -> None:
        """Start signed in when the client, or the credential file, already has a session."""
        endpoint = self.endpoint_field.value.strip()
        project = self.project_field.value.strip()
        client = self.client
        if client is None and endpoint and project:
            try:
                client = Client.from_saved(endpoint, project)
            except ValueError:  # nothing saved for them (or not a URL)
                return
            self.client, self._owns_client = client, True
            self.remember_box.value = True
        if client is None or client.authentication not in ("session", "jwt"):
            return
        try:
            self.account = client.account()
        except AuthenticationError:
            self._say("The saved session has ended; sign in again.")
        except FrameportError as exc:
            self._say(self._failure(exc), error=True)

    def _show_state(self) -> None:
        self._form.layout.display = "none" if self.signed_in else None
        self.logout_button.layout.display = None if self.signed_in else "none"

    def _failure(self, error: BaseException) -> str:
        return describe_failure(
            error,
            endpoint=self.endpoint_field.value.strip(),
            project=self.project_field.value.strip(),
        )

    def _say(self, text: str, *, error: bool = False) -> None:
        self.status.value = message_html(text, error=error)

    def _who(self) -> str:
        account = self.account or {}
        name, email = account.get("name") or "", account.get("email") or ""
        return f"{name} <{email}>" if name and email else name or email or str(account.get("$id"))

    def summary(self) -> str:
        """The form as plain text: where it signs in, and who is signed in."""
        where = f"{self.endpoint_field.value or '(no endpoint)'}, project "
        where += self.project_field.value or "(none)"
        if self.signed_in:
            return f"frameport login: signed in as {self._who()} at {where}"
        return f"frameport login: not signed in ({where}); run the cell in Jupyter to sign in"

    def _html_body(self) -> str:
        state = (
            f"Signed in as <b>{html.escape(self._who())}</b>"
            if self.signed_in
            else "Not signed in; run this cell in Jupyter with ipywidgets to sign in."
        )
        where = html.escape(f"{self.endpoint_field.value} · project {self.project_field.value}")
        return f"<b>frameport login</b><br>{state}<br><small>{where}</small>"


def login(
    client: Client | None = None, endpoint: str | None = None, project: str | None = None
) -> LoginForm:
    """A sign-in form for `client` (or a new client for `endpoint` and `project`; they default
    to the client's, then to FRAMEPORT_ENDPOINT and FRAMEPORT_PROJECT).

    Example (a notebook cell)::

        form = fp.widgets.login(endpoint="http://127.0.0.1:8080/v1", project="demo")
        form  # after "Log in", form.client is signed in and form.account says who
    """
    return LoginForm(client, endpoint, project)
