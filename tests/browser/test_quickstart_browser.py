"""notebooks/quickstart.ipynb in JupyterLab, driven by headless Chromium as a person would.

A copy of the notebook in the shared JupyterLab's root (lab_support) runs every cell; the
test signs in through the login widget, waits for the signed-in state and a rendered image
preview, keeps a screenshot in test-artifacts/quickstart.png and one of each widget in
test-artifacts/widgets/ (with FRAMEPORT_DOCS_SCREENSHOTS=1, as `make docs-images` sets it, in
docs/images/: the pictures the notebook-widgets guide shows), saves the notebook and checks
that the saved file holds no secret.
"""

from __future__ import annotations

import shutil

import pytest
from lab_support import (
    ARTIFACTS,
    REPO,
    UI_WAIT_MS,
    JupyterLab,
    assert_no_secret,
    notebook_page,
    save_notebook,
    save_widget_screenshots,
)

pytest_plugins = ["lab_server"]

NOTEBOOK = REPO / "notebooks" / "quickstart.ipynb"
SCREENSHOT = ARTIFACTS / "quickstart.png"
# The widgets the notebook shows, by CSS class, and the picture the docs keep of each.
WIDGET_SCREENSHOTS = {
    "frameport-login": "widget-login.png",
    "frameport-preview": "widget-preview.png",
    "frameport-gallery": "widget-gallery.png",
    "frameport-table": "widget-table.png",
}
DEMO_EMAIL = "demo@example.org"  # the user quickstart.ipynb creates
AN_IMAGE_PREVIEW_SHOWS = """() => [...document.querySelectorAll(".frameport-preview img")]
    .some(image => image.complete && image.naturalWidth > 0)"""


@pytest.mark.slow
def test_quickstart_runs_signs_in_and_previews_in_chromium(jupyter_lab: JupyterLab) -> None:
    from playwright.sync_api import expect

    shutil.copy(NOTEBOOK, jupyter_lab.root / NOTEBOOK.name)
    demo_password = jupyter_lab.environment["FRAMEPORT_DEMO_PASSWORD"]
    with notebook_page(jupyter_lab, NOTEBOOK.name) as page:
        login = page.locator(".frameport-login")
        login.locator("input[placeholder='you@example.org']").fill(DEMO_EMAIL)
        login.locator("input[type=password]").fill(demo_password)
        login.get_by_role("button", name="Log in").click()
        expect(login).to_contain_text(f"Signed in as Demo User <{DEMO_EMAIL}>", timeout=UI_WAIT_MS)
        assert login.locator("input[type=password]").input_value() == ""

        page.wait_for_function(AN_IMAGE_PREVIEW_SHOWS, timeout=UI_WAIT_MS)
        login.evaluate("element => element.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(SCREENSHOT))
        save_widget_screenshots(page, WIDGET_SCREENSHOTS)
        save_notebook(page)

    saved = (jupyter_lab.root / NOTEBOOK.name).read_text()
    assert "application/vnd.jupyter.widget-state+json" in saved  # the widget state was saved
    assert DEMO_EMAIL in saved
    assert_no_secret(saved, [demo_password])
