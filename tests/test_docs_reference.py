"""Every public name is documented, and every one is in the API reference.

The public names are `frameport.__all__`, `frameport.widgets.__all__` and
`frameport.local.__all__`; the public methods and properties of their classes count too.
The docstrings are read with griffe, the loader the reference itself is built with, so a
name documented here is a name documented on the site.
"""

from __future__ import annotations

import re
from pathlib import Path

import griffe
import pytest

import frameport
import frameport.local
import frameport.widgets

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "docs" / "reference"
PUBLIC_MODULES = {
    "frameport": frameport.__all__,
    "frameport.widgets": frameport.widgets.__all__,
    "frameport.local": frameport.local.__all__,
}
PUBLIC_NAMES = [f"{module}.{name}" for module, names in PUBLIC_MODULES.items() for name in names]
# Inspecting ipywidgets classes touches their deprecated class attributes.
pytestmark = pytest.mark.filterwarnings("ignore:Widget.*deprecated:DeprecationWarning")


@pytest.fixture(scope="module")
def package() -> griffe.Object:
    extensions = griffe.load_extensions(f"{REPO}/docs/hooks/griffe_docstrings.py:SourceDocstrings")
    loaded = griffe.load("frameport", force_inspection=True, extensions=extensions)
    assert isinstance(loaded, griffe.Object)
    return loaded


def resolve(package: griffe.Object, path: str) -> griffe.Object | griffe.Alias:
    return package[path.removeprefix("frameport.")]


def undocumented(obj: griffe.Object | griffe.Alias) -> list[str]:
    """`obj`'s path when it has no docstring, and those of its public members without one."""
    missing = [] if obj.docstring and obj.docstring.value.strip() else [obj.path]
    if obj.is_class:
        for name, member in obj.members.items():
            if name.startswith("_") or (member.is_alias and not member.resolved):
                continue
            if not (member.docstring and member.docstring.value.strip()):
                missing.append(f"{obj.path}.{name}")
    return missing


@pytest.mark.parametrize("path", PUBLIC_NAMES)
def test_public_name_has_a_docstring(package: griffe.Object, path: str) -> None:
    assert undocumented(resolve(package, path)) == []


def test_every_public_name_is_in_the_reference() -> None:
    text = "\n".join(page.read_text(encoding="utf-8") for page in REFERENCE.glob("*.md"))
    rendered = set(re.findall(r"^::: (\S+)$", text, flags=re.MULTILINE))
    assert sorted(set(PUBLIC_NAMES) - rendered) == []
    assert sorted(rendered - set(PUBLIC_NAMES)) == []  # the reference shows no private module
