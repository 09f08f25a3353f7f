"""JupyterLab driven by headless Chromium, for the browser tests.

`start_jupyter_lab` runs JupyterLab on a free loopback port with a generated token, its
settings and data in a directory of its own; `notebook_page` opens one notebook of its root in
Debian's Chromium (/usr/bin/chromium, never a downloaded browser), in a workspace of its own,
runs every cell and checks none failed, and shuts the notebook's kernel down afterwards.

Without /usr/bin/chromium the tests skip, unless CI is set: then they fail, because CI runs
scripts/install-browser-deps.sh first.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
WIDGET_IMAGES = (
    REPO / "docs" / "images"
    if os.environ.get("FRAMEPORT_DOCS_SCREENSHOTS") == "1"
    else ARTIFACTS / "widgets"
)
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
# Session cookies and JWTs are base64 of JSON ("eyJ..."); API keys of the local service:
SECRET_PATTERNS = [re.compile(r"eyJ[A-Za-z0-9+/=_-]{20,}"), re.compile(r"standard_[0-9a-f]{32,}")]
SERVER_START_SECONDS = 120
CELL_RUN_MS = 180_000
UI_WAIT_MS = 60_000

# The text of each failed cell's output: JupyterLab renders an error as stderr text (its
# traceback), told from other stderr output (warnings, logs) by a traceback or an error name.
FAILED_OUTPUTS = r"""() => [...document.querySelectorAll(
        '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
    .map(output => output.textContent)
    .filter(text => /Traceback|^\s*\w*(Error|Exception)\b/m.test(text))"""
# True once every code cell shows an execution count ("[3]:"), or as soon as one failed.
ALL_CELLS_RAN_OR_FAILED = f"""() => {{
    if (({FAILED_OUTPUTS})().length) return true;
    const prompts = [...document.querySelectorAll(".jp-CodeCell .jp-InputPrompt")];
    return prompts.length > 0 && prompts.every(prompt => /\\[\\d+\\]/.test(prompt.textContent));
}}"""

# JupyterLab user settings: save widget state with the notebook (so the checks see it),
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
    environment: Mapping[str, str]  # the server's, which its kernels inherit

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_lab_settings(directory: Path) -> None:
    for plugin, settings in LAB_SETTINGS.items():
        path = directory / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings))


def wait_until_serving(process: subprocess.Popen[bytes], lab: JupyterLab) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with status {process.returncode}")
        try:
            if httpx.get(f"{lab.url}/api/status", headers=lab.headers).is_success:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"JupyterLab did not answer within {SERVER_START_SECONDS} s")


def log_tail(path: Path, token: str) -> str:
    return path.read_text(errors="replace")[-4000:].replace(token, "***")


@contextmanager
def start_jupyter_lab(directory: Path, environment: Mapping[str, str]) -> Iterator[JupyterLab]:
    """JupyterLab serving `directory`/root, its own settings and data in `directory`/jupyter,
    with `environment` added to its own (and so to its kernels')."""
    require_browser_tools()
    root, home = directory / "root", directory / "jupyter"
    root.mkdir()
    write_lab_settings(home / "settings")
    port, token = free_port(), secrets.token_hex(24)
    lab = JupyterLab(
        f"http://127.0.0.1:{port}",
        token,
        root,
        {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(home / "config"),
            "JUPYTER_DATA_DIR": str(home / "data"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
            "FRAMEPORT_CONFIG_DIR": str(home / "frameport"),
            **environment,
        },
    )
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}",
        "--ServerApp.terminals_enabled=False", "--LabApp.extension_manager=readonly",
        "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    if os.geteuid() == 0:  # containers and CI machines often run as root
        command.append("--allow-root")
    log = directory / "jupyterlab.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            command, env=dict(lab.environment), stdout=log_file, stderr=subprocess.STDOUT, cwd=root
        )
    try:
        try:
            wait_until_serving(process, lab)
        except RuntimeError as exc:
            pytest.fail(f"{exc}; its log ends:\n{log_tail(log, token)}")
        yield lab
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def notebook_sessions(lab: JupyterLab, notebook: str) -> list[dict[str, object]]:
    sessions = httpx.get(f"{lab.url}/api/sessions", headers=lab.headers).json()
    return [session for session in sessions if session["path"] == notebook]


def wait_for_idle_kernel(lab: JupyterLab, notebook: str) -> None:
    """Wait until the server reports the notebook's kernel started and idle."""
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        states = [
            session["kernel"]["execution_state"]  # type: ignore[index]
            for session in notebook_sessions(lab, notebook)
        ]
        if states == ["idle"]:
            return
        time.sleep(0.2)
    raise AssertionError(f"the kernel of {notebook} did not start within {SERVER_START_SECONDS} s")


def shut_down_kernels(lab: JupyterLab, notebook: str) -> None:
    for session in notebook_sessions(lab, notebook):
        httpx.delete(f"{lab.url}/api/sessions/{session['id']}", headers=lab.headers)


def click_menu(page: Page, menu: str, command: str) -> None:
    """Open a menu of JupyterLab's menu bar and click the item running `command`."""
    page.locator(".lm-MenuBar-itemLabel", has_text=menu).first.click()
    page.locator(f'.lm-Menu-item[data-command="{command}"]').first.click()


@contextmanager
def notebook_page(lab: JupyterLab, notebook: str) -> Iterator[Page]:
    """Chromium showing `notebook` (in `lab`'s root) with every cell run and none failed.

    If the block fails, a screenshot goes to test-artifacts/NAME-failure.png; the notebook's
    kernel is shut down after it."""
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    name = Path(notebook).stem
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        try:
            # A workspace per notebook: one test's open tabs never come back in another's.
            page.goto(f"{lab.url}/lab/workspaces/{name}/tree/{notebook}?token={lab.token}")
            page.locator(".jp-Notebook .jp-CodeCell").first.wait_for(timeout=UI_WAIT_MS)
            wait_for_idle_kernel(lab, notebook)
            expect(page.locator(".jp-StatusBar-Widget", has_text="| Idle")).to_be_visible()
            click_menu(page, "Run", "runmenu:run-all")
            page.wait_for_function(ALL_CELLS_RAN_OR_FAILED, timeout=CELL_RUN_MS)
            # A cell's count can show before its error output: the kernel says idle after it.
            expect(page.locator(".jp-StatusBar-Widget", has_text="| Idle")).to_be_visible()
            failed = page.evaluate(FAILED_OUTPUTS)
            assert not failed, f"a cell of {notebook} failed:\n{failed[0]}"
            yield page
        except Exception:
            page.screenshot(path=str(ARTIFACTS / f"{name}-failure.png"))
            raise
        finally:
            browser.close()
            shut_down_kernels(lab, notebook)


def save_notebook(page: Page) -> None:
    from playwright.sync_api import expect

    click_menu(page, "File", "docmanager:save")
    expect(page.locator(".jp-mod-dirty")).to_have_count(0, timeout=UI_WAIT_MS)


def save_widget_screenshots(page: Page, pictures: Mapping[str, str]) -> None:
    """One picture of each widget (by CSS class: file name), for the documentation."""
    WIDGET_IMAGES.mkdir(parents=True, exist_ok=True)
    for css_class, name in pictures.items():
        widget = page.locator(f".jp-OutputArea-output .{css_class}").first
        widget.scroll_into_view_if_needed()
        widget.screenshot(path=str(WIDGET_IMAGES / name), animations="disabled")


def assert_no_secret(saved: str, known: list[str]) -> None:
    """Neither one of the `known` secrets nor anything shaped like a credential is in
    `saved`."""
    for secret in known:
        assert secret not in saved
    for pattern in SECRET_PATTERNS:
        assert not pattern.search(saved), f"a secret-looking value ({pattern.pattern}) was saved"
