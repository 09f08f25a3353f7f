"""The login widget, driven through its models against the local service."""

from __future__ import annotations

import html
import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ipywidgets
import pytest

import frameport.widgets as fpw
from frameport import AuthenticationError, Client
from frameport._core._auth import credential_file
from frameport.local import LocalService

MakeUser = Callable[..., Any]  # conftest.make_user


@pytest.fixture(autouse=True)
def private_credential_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FRAMEPORT_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "config"


@pytest.fixture
def form(service: LocalService) -> Iterator[fpw.LoginForm]:
    widget = fpw.login(endpoint=service.endpoint, project=service.project)
    yield widget
    if widget.client is not None:
        widget.client.close()


def all_states(widget: ipywidgets.Widget) -> list[dict[str, Any]]:
    """The synced state of `widget` and of every widget inside it."""
    states = [widget.get_state()]
    for child in getattr(widget, "children", ()):
        states.extend(all_states(child))
    return states


def session_secrets(client: Client) -> list[str]:
    session = client._async._credentials.session
    assert session is not None
    return [cookie.reveal() for cookie in session.cookies.values()]


def submit(form: fpw.LoginForm, email: str, password: str) -> None:
    form.email_field.value = email
    form.password_field.value = password
    form.login_button.click()


def status_text(form: fpw.LoginForm) -> str:
    return html.unescape(str(form.status.value))


def test_login_signs_in_and_keeps_no_secret(
    form: fpw.LoginForm, service: LocalService, make_user: MakeUser
) -> None:
    user = make_user(name="Ada Lovelace")
    submit(form, user.email, user.password)
    assert form.signed_in
    assert form.client is not None and form.client.authentication == "session"
    assert form.client.account()["email"] == user.email
    assert "Ada Lovelace" in status_text(form) and user.email in status_text(form)
    assert form.password_field.value == ""
    secrets = [user.password, service.key, *session_secrets(form.client)]
    saved = json.dumps(all_states(form), default=str) + repr(form) + form._repr_html_()
    for secret in secrets:
        assert secret not in saved
    assert form._form.layout.display == "none"
    assert form.logout_button.layout.display is None


def test_wrong_password_is_said_plainly(form: fpw.LoginForm, make_user: MakeUser) -> None:
    user = make_user()
    submit(form, user.email, user.password + "-wrong")
    assert not form.signed_in
    assert "Wrong e-mail or password." in status_text(form)
    assert form.password_field.value == ""


def test_unknown_project_is_said_plainly(service: LocalService, make_user: MakeUser) -> None:
    user = make_user()
    form = fpw.login(endpoint=service.endpoint, project="no-such-project")
    submit(form, user.email, user.password)
    assert not form.signed_in
    assert "There is no project 'no-such-project'" in status_text(form)


def test_unreachable_endpoint_is_said_plainly(service: LocalService) -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}/v1"
    with Client(endpoint, service.project, retries=0) as client:
        form = fpw.login(client)
        assert form.endpoint_field.value == endpoint
        submit(form, "someone@example.org", "a password")
    assert not form.signed_in
    assert f"Cannot reach the service at {endpoint}" in status_text(form)
    assert form.password_field.value == ""


def test_missing_fields_are_asked_for(form: fpw.LoginForm) -> None:
    submit(form, "someone@example.org", "")
    assert "Enter your e-mail and password." in status_text(form)
    form.endpoint_field.value = "not a url"
    submit(form, "someone@example.org", "a password")
    assert "endpoint must be an http(s) URL" in status_text(form)
    assert form.client is None


def test_api_key_client_gets_a_new_signed_in_client(client: Client, make_user: MakeUser) -> None:
    # fp.widgets.login(client) with an API-key client signs in a new client for the same
    # endpoint and project; the key client is left as it was.
    user = make_user()
    form = fpw.login(client)
    submit(form, user.email, user.password)
    assert form.signed_in, status_text(form)
    assert form.client is not None and form.client is not client
    assert form.client.authentication == "session"
    assert form.client.account()["email"] == user.email
    assert client.authentication == "key"
    form.log_out()
    assert client.authentication == "key"
    form.client.close()


def test_logout_ends_the_session(form: fpw.LoginForm, make_user: MakeUser) -> None:
    user = make_user()
    submit(form, user.email, user.password)
    assert form.signed_in and form.client is not None
    form.logout_button.click()
    assert not form.signed_in
    assert "Signed out." in status_text(form)
    assert form.client.authentication is None
    with pytest.raises(AuthenticationError):
        form.client.account()
    assert form._form.layout.display is None


def test_remember_me_resumes_the_session_until_logout(
    service: LocalService, make_user: MakeUser, private_credential_file: Path
) -> None:
    user = make_user(name="Grace")
    first = fpw.login(endpoint=service.endpoint, project=service.project)
    first.remember_box.value = True
    submit(first, user.email, user.password)
    assert first.signed_in
    assert user.password not in credential_file().read_text()

    second = fpw.login(endpoint=service.endpoint, project=service.project)
    assert second.signed_in and second.remember_box.value
    assert second.account is not None and second.account["email"] == user.email
    second.logout_button.click()

    third = fpw.login(endpoint=service.endpoint, project=service.project)
    assert not third.signed_in


def test_session_is_not_remembered_unless_asked(form: fpw.LoginForm, make_user: MakeUser) -> None:
    user = make_user()
    submit(form, user.email, user.password)
    again = fpw.login(endpoint=form.endpoint_field.value, project=form.project_field.value)
    assert not again.signed_in


def test_views_without_a_widget_frontend(form: fpw.LoginForm, make_user: MakeUser) -> None:
    before = form._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in before
    assert "not signed in" in before["text/plain"]
    assert "Not signed in" in before["text/html"]
    user = make_user(name="Ada <script>")
    submit(form, user.email, user.password)
    after = form._repr_mimebundle_()
    assert f"signed in as Ada <script> <{user.email}>" in after["text/plain"]
    assert "Ada &lt;script&gt;" in after["text/html"] and "<script>" not in after["text/html"]
