"""notebooks/quickstart.ipynb in JupyterLab, driven by headless Chromium as a person would.

JupyterLab runs on a free loopback port with a generated token and a temporary root holding a
copy of the notebook; Debian's Chromium (/usr/bin/chromium, never a downloaded browser) opens
it, runs every cell, signs in through the login widget, waits for the signed-in state and a
rendered image preview, keeps a screenshot in test-artifacts/quickstart.png and one of each
widget in test-artifacts/widgets/ (with FRAMEPORT_DOCS_SCREENSHOTS=1, as `make docs-images`
sets it, in docs/images/: the pictures the notebook-widgets guide shows), saves the notebook
and checks that the saved file holds no secret.

Without /usr/bin/chromium the test skips, unless CI is set: then it fails, because CI runs
scripts/install-browser-deps.sh first.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "quickstart.ipynb"
SCREENSHOT = REPO / "test-artifacts" / "quickstart.png"
FAILURE_SCREENSHOT = REPO / "test-artifacts" / "quickstart-failure.png"
DOCS_IMAGES = REPO / "docs" / "images"
WIDGET_IMAGES = (
    DOCS_IMAGES
    if os.environ.get("FRAMEPORT_DOCS_SCREENSHOTS") == "1"
    else REPO / "test-artifacts" / "widgets"
)
# The widgets the notebook shows, by CSS class, and the picture the docs keep of each.
WIDGET_SCREENSHOTS = {
    "frameport-login": "widget-login.png",
    "frameport-preview": "widget-preview.png",
    "frameport-gallery": "widget-gallery.png",
    "frameport-table": "widget-table.png",
}
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DEMO_EMAIL = "demo@example.org"  # the user quickstart.ipynb creates
# Session cookies and JWTs are base64 of JSON ("eyJ..."); API keys of the local service:
SECRET_PATTERNS = [re.compile(r"eyJ[A-Za-z0-9+/=_-]{20,}"), re.compile(r"standard_[0-9a-f]{32,}")]
SERVER_START_SECONDS = 120
CELL_RUN_MS = 180_000
UI_WAIT_MS = 60_000

ERROR_OUTPUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]'
# True once every code cell shows an execution count ("[3]:"), or as soon as one failed.
ALL_CELLS_RAN_OR_FAILED = r"""errorOutput => {
    if (document.querySelector(errorOutput)) return true;
    const prompts = [...document.querySelectorAll(".jp-CodeCell .jp-InputPrompt")];
    return prompts.length > 0 && prompts.every(prompt => /\[\d+\]/.test(prompt.textContent));
}"""
AN_IMAGE_PREVIEW_SHOWS = """() => [...document.querySelectorAll(".frameport-preview img")]
    .some(image => image.complete && image.naturalWidth > 0)"""

# JupyterLab user settings: save widget state with the notebook (so the check below sees it),
# render every cell, and never reach for news or updates.
LAB_SETTINGS = {
    "@jupyter-widgets/jupyterlab-manager/plugin": {"saveState": True},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}


def require_browser_tools() -> None:
    """Skip without Chromium outside CI; in CI, or with Chromium but no driver, fail."""
    install = "run scripts/install-browser-deps.sh"
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (Debian's chromium package); {install}"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {reason}")
        pytest.skip(reason)
    for module in ("playwright", "jupyterlab"):
        try:
            __import__(module)
        except ImportError:
            pytest.fail(f"{module} is not installed in the venv; {install}")


@dataclass(frozen=True)
class JupyterLab:
    url: str
    token: str
    root: Path
    demo_password: str


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_lab_settings(directory: Path) -> None:
    for plugin, settings in LAB_SETTINGS.items():
        path = directory / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings))


def wait_until_serving(process: subprocess.Popen[bytes], url: str, token: str) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with status {process.returncode}")
        try:
            if httpx.get(
                f"{url}/api/status", headers={"Authorization": f"token {token}"}
            ).is_success:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"JupyterLab did not answer within {SERVER_START_SECONDS} s")


def log_tail(path: Path, token: str) -> str:
    return path.read_text(errors="replace")[-4000:].replace(token, "***")


@pytest.fixture
def jupyter_lab(tmp_path: Path) -> Iterator[JupyterLab]:
    require_browser_tools()
    root, home = tmp_path / "root", tmp_path / "jupyter"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    write_lab_settings(home / "settings")
    port, token = free_port(), secrets.token_hex(24)
    environment = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "FRAMEPORT_CONFIG_DIR": str(home / "frameport"),
        "FRAMEPORT_DEMO_PASSWORD": f"pw-{secrets.token_hex(12)}",
    }
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}",
        "--ServerApp.terminals_enabled=False", "--LabApp.extension_manager=readonly",
        "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    if os.geteuid() == 0:  # containers and CI machines often run as root
        command.append("--allow-root")
    log = tmp_path / "jupyterlab.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            command, env=environment, stdout=log_file, stderr=subprocess.STDOUT, cwd=root
        )
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_until_serving(process, url, token)
        except RuntimeError as exc:
            pytest.fail(f"{exc}; its log ends:\n{log_tail(log, token)}")
        yield JupyterLab(url, token, root, environment["FRAMEPORT_DEMO_PASSWORD"])
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for_idle_kernel(lab: JupyterLab) -> None:
    """Wait until the server reports the notebook's kernel started and idle."""
    deadline = time.monotonic() + SERVER_START_SECONDS
    headers = {"Authorization": f"token {lab.token}"}
    while time.monotonic() < deadline:
        sessions = httpx.get(f"{lab.url}/api/sessions", headers=headers).json()
        states = [session["kernel"]["execution_state"] for session in sessions]
        if states == ["idle"]:
            return
        time.sleep(0.2)
    raise AssertionError(f"the notebook's kernel did not start within {SERVER_START_SECONDS} s")


def click_menu(page: Page, menu: str, command: str) -> None:
    """Open a menu of JupyterLab's menu bar and click the item running `command`."""
    page.locator(".lm-MenuBar-itemLabel", has_text=menu).first.click()
    page.locator(f'.lm-Menu-item[data-command="{command}"]').first.click()


def save_widget_screenshots(page: Page) -> None:
    """One picture of each widget, for the documentation."""
    WIDGET_IMAGES.mkdir(parents=True, exist_ok=True)
    for css_class, name in WIDGET_SCREENSHOTS.items():
        widget = page.locator(f".jp-OutputArea-output .{css_class}").first
        widget.scroll_into_view_if_needed()
        widget.screenshot(path=str(WIDGET_IMAGES / name), animations="disabled")


@pytest.mark.slow
def test_quickstart_runs_signs_in_and_previews_in_chromium(jupyter_lab: JupyterLab) -> None:
    from playwright.sync_api import expect, sync_playwright

    SCREENSHOT.parent.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        try:
            page.goto(f"{jupyter_lab.url}/lab/tree/{NOTEBOOK.name}?token={jupyter_lab.token}")
            page.locator(".jp-Notebook .jp-CodeCell").first.wait_for(timeout=UI_WAIT_MS)
            wait_for_idle_kernel(jupyter_lab)
            expect(page.locator(".jp-StatusBar-Widget", has_text="| Idle")).to_be_visible()
            click_menu(page, "Run", "runmenu:run-all")
            page.wait_for_function(ALL_CELLS_RAN_OR_FAILED, arg=ERROR_OUTPUT, timeout=CELL_RUN_MS)
            errors = page.locator(ERROR_OUTPUT)
            assert errors.count() == 0, errors.first.inner_text()

            login = page.locator(".frameport-login")
            login.locator("input[placeholder='you@example.org']").fill(DEMO_EMAIL)
            login.locator("input[type=password]").fill(jupyter_lab.demo_password)
            login.get_by_role("button", name="Log in").click()
            expect(login).to_contain_text(
                f"Signed in as Demo User <{DEMO_EMAIL}>", timeout=UI_WAIT_MS
            )
            assert login.locator("input[type=password]").input_value() == ""

            page.wait_for_function(AN_IMAGE_PREVIEW_SHOWS, timeout=UI_WAIT_MS)
            login.evaluate("element => element.scrollIntoView({block: 'start'})")
            page.screenshot(path=str(SCREENSHOT))
            save_widget_screenshots(page)

            click_menu(page, "File", "docmanager:save")
            expect(page.locator(".jp-mod-dirty")).to_have_count(0, timeout=UI_WAIT_MS)
        except Exception:
            page.screenshot(path=str(FAILURE_SCREENSHOT))
            raise
        finally:
            browser.close()

    saved = (jupyter_lab.root / NOTEBOOK.name).read_text()
    assert "application/vnd.jupyter.widget-state+json" in saved  # the widget state was saved
    assert DEMO_EMAIL in saved
    assert jupyter_lab.demo_password not in saved
    for pattern in SECRET_PATTERNS:
        assert not pattern.search(saved), f"a secret-looking value ({pattern.pattern}) was saved"
