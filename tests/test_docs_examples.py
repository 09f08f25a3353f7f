"""The examples of the documentation: every ```python block of the README and of each page
under docs/ is executed, in order and in one namespace (`run_page`), by
test_guides_together.py, where all the pages run twice on one local service.

Each page gets `client`, an API-key client for the service (FRAMEPORT_ENDPOINT,
FRAMEPORT_PROJECT and FRAMEPORT_KEY name it too), runs in an empty working directory, and
finds the `frameport` command on PATH.
Blocks fenced as ```py are shown but not run (they need a real service or a secret).
"""

from __future__ import annotations

import linecache
import os
import re
import sys
from pathlib import Path

import pytest

from frameport.local import LocalService

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def runnable_blocks(page: Path) -> list[str]:
    return PYTHON_BLOCK.findall(page.read_text(encoding="utf-8"))


PAGES = [REPO / "README.md", *sorted(p for p in DOCS.rglob("*.md") if runnable_blocks(p))]


def point_at(service: LocalService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment a reader of the guides has: FRAMEPORT_* naming `service`, frameport's
    cache and configuration under `tmp_path`, and the `frameport` command on PATH."""
    monkeypatch.setenv("FRAMEPORT_ENDPOINT", service.endpoint)
    monkeypatch.setenv("FRAMEPORT_PROJECT", service.project)
    monkeypatch.setenv("FRAMEPORT_KEY", service.key)
    monkeypatch.delenv("FRAMEPORT_JWT", raising=False)
    monkeypatch.setenv("FRAMEPORT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FRAMEPORT_CONFIG_DIR", str(tmp_path / "config"))
    # The `frameport` command installed beside this interpreter, as in an activated venv.
    scripts = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", scripts + os.pathsep + os.environ.get("PATH", ""))


def run_page(page: Path, service: LocalService) -> None:
    """The runnable blocks of `page`, in order, in one namespace, in the working directory."""
    with service.client() as client:
        namespace: dict[str, object] = {"__name__": "__docs__", "client": client}
        for number, block in enumerate(runnable_blocks(page), start=1):
            name = f"{page.relative_to(REPO)} (block {number})"
            linecache.cache[name] = (len(block), None, block.splitlines(True), name)
            code = compile(block, name, "exec")
            try:
                exec(code, namespace)
            except Exception as error:
                error.add_note(f"raised by the example {name}")
                raise


def test_the_guides_have_examples_to_run() -> None:
    assert {p.name for p in PAGES} >= {"README.md", "getting-started.md", "tables.md", "filters.md"}
