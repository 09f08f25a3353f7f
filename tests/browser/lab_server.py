"""The shared JupyterLab of the browser tests, as a pytest plugin: a test module names it in
``pytest_plugins`` (a conftest.py here would shadow the tests' own `conftest` module)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from lab_support import JupyterLab, start_jupyter_lab


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    """One JupyterLab for the browser tests of a session (each notebook gets a workspace and
    a kernel of its own): starting it takes seconds a test need not spend again. Tests copy
    or write their notebooks into its `root`. Its kernels get FRAMEPORT_DEMO_PASSWORD, the
    password quickstart.ipynb gives its demo user. A test module uses it with
    ``pytest_plugins = ["lab_server"]``."""
    password = f"pw-{secrets.token_hex(12)}"
    with start_jupyter_lab(
        tmp_path_factory.mktemp("jupyter-lab"), {"FRAMEPORT_DEMO_PASSWORD": password}
    ) as lab:
        yield lab
