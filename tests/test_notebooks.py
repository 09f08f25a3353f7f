"""Every notebook in notebooks/ runs top to bottom against the embedded local service, and is
saved clean: no outputs, and nothing secret before or after running."""

from __future__ import annotations

import re
import secrets
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = {
    "quickstart.ipynb",
    "export_to_parquet.ipynb",
    "upload_dataframe.ipynb",
    "polars_duckdb_sql.ipynb",
}
# The venv's own ipykernel (its "python" runs as this interpreter), never a user's kernelspec.
VENV_KERNELS = Path(sys.prefix) / "share" / "jupyter" / "kernels"
CELL_TIMEOUT = 300
# Session cookies and JWTs are base64 of JSON ("eyJ..."); API keys of the local service:
SECRET_PATTERNS = [re.compile(r"eyJ[A-Za-z0-9+/=_-]{20,}"), re.compile(r"standard_[0-9a-f]{32,}")]


def assert_no_secret(text: str, *extra: str) -> None:
    for pattern in SECRET_PATTERNS:
        assert not pattern.search(text), f"a secret-looking value ({pattern.pattern})"
    for secret in extra:
        assert secret not in text


def run_notebook(path: Path, directory: Path) -> nbformat.NotebookNode:
    """`path` executed top to bottom in the venv's kernel, in `directory`, widget state kept."""
    notebook: nbformat.NotebookNode = nbformat.read(path, as_version=4)
    kernel = KernelManager(
        kernel_name="python3",
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(VENV_KERNELS)]),
    )
    runner = NotebookClient(
        notebook,
        km=kernel,
        timeout=CELL_TIMEOUT,
        allow_errors=False,
        store_widget_state=True,
        resources={"metadata": {"path": str(directory)}},
        shutdown_kernel="immediate",
    )
    # The kernel is stopped once the notebook ran (nbclient stops only the kernels it made).
    runner.execute(cleanup_kc=True)
    return notebook


def test_the_notebooks_are_all_here() -> None:
    assert {path.name for path in NOTEBOOKS} >= EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_is_saved_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    assert "widgets" not in notebook.metadata
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
    assert_no_secret(path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_runs_against_the_local_service(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    password = f"pw-{secrets.token_hex(12)}"
    monkeypatch.setenv("FRAMEPORT_DEMO_PASSWORD", password)
    monkeypatch.setenv("FRAMEPORT_CONFIG_DIR", str(tmp_path / "config"))
    notebook = run_notebook(path, tmp_path)
    executed = nbformat.writes(notebook)
    assert all(
        cell.execution_count is not None for cell in notebook.cells if cell.cell_type == "code"
    )
    assert_no_secret(executed, password)
    if path.name == "quickstart.ipynb":  # the widgets' state was saved, and the plot drawn
        assert "application/vnd.jupyter.widget-state+json" in executed
        assert "image/png" in executed


@pytest.mark.slow
def test_quickstart_runs_without_a_password_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `jupyter nbconvert --execute` has no stdin: getpass cannot prompt there.
    monkeypatch.delenv("FRAMEPORT_DEMO_PASSWORD", raising=False)
    monkeypatch.setenv("FRAMEPORT_CONFIG_DIR", str(tmp_path / "config"))
    executed = nbformat.writes(run_notebook(NOTEBOOK_DIR / "quickstart.ipynb", tmp_path))
    assert "random password that is not shown" in executed
    assert_no_secret(executed)
