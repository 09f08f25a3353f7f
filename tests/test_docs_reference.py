"""Every public name is documented, and every one is in the API reference.

The public names are `frameport.__all__`, `frameport.widgets.__all__` and
`frameport.local.__all__`; the public methods and properties of their classes count too.
The docstrings are read with griffe and the extensions the reference is built with, so a
name documented here is a name documented on the site. That runs in a child process,
because one of those extensions renames the modules of the exported classes' methods.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

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

# Prints, as JSON, the public paths among argv[1:] (and their classes' public members) that
# have no docstring once griffe has loaded the package as the documentation build does.
FIND_UNDOCUMENTED = """
import json, sys, warnings
import griffe

warnings.simplefilter("ignore", DeprecationWarning)  # ipywidgets' deprecated class attributes
hooks = "docs/hooks/griffe_docstrings.py"
extensions = griffe.load_extensions(f"{hooks}:PublicMembers", f"{hooks}:SourceDocstrings")
package = griffe.load("frameport", force_inspection=True, extensions=extensions)

def documented(obj):
    return bool(obj.docstring and obj.docstring.value.strip())

missing = []
for path in sys.argv[1:]:
    obj = package[path.removeprefix("frameport.")]
    if not documented(obj):
        missing.append(path)
    if obj.is_class:
        for name, member in obj.members.items():
            if name.startswith("_") or (member.is_alias and not member.resolved):
                continue
            if not documented(member):
                missing.append(f"{path}.{name}")
print(json.dumps(missing))
"""


def undocumented(paths: list[str]) -> list[str]:
    found = subprocess.run(
        [sys.executable, "-c", FIND_UNDOCUMENTED, *paths],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    missing: list[str] = json.loads(found.stdout)
    return missing


def test_every_public_name_has_a_docstring() -> None:
    assert undocumented(PUBLIC_NAMES) == []


def test_every_public_name_is_in_the_reference() -> None:
    text = "\n".join(page.read_text(encoding="utf-8") for page in REFERENCE.glob("*.md"))
    rendered = set(re.findall(r"^::: (\S+)$", text, flags=re.MULTILINE))
    assert sorted(set(PUBLIC_NAMES) - rendered) == []
    assert sorted(rendered - set(PUBLIC_NAMES)) == []  # the reference shows no private module


# Prints, as JSON, what the API reference shows of some sync methods: their return types and
# whether a docstring of a sync class awaits anything.
SYNC_SIGNATURES = """
import json, warnings
import griffe

warnings.simplefilter("ignore", DeprecationWarning)
hooks = "docs/hooks/griffe_docstrings.py"
extensions = griffe.load_extensions(f"{hooks}:PublicMembers", f"{hooks}:SourceDocstrings")
package = griffe.load("frameport", force_inspection=True, extensions=extensions)
shown = {
    path: str(package[path].returns)
    for path in ("Client.table", "Client.create_bucket", "TableQuery.where", "Table.iter_batches")
}
awaiting = [
    f"{cls}.{name}"
    for cls in ("Client", "Table", "TableQuery", "Bucket", "Function")
    for name, member in package[cls].all_members.items()
    if not name.startswith("_")
    and member.docstring is not None
    and "await " in member.docstring.value
]
print(json.dumps({"returns": shown, "awaiting": awaiting}))
"""


def test_the_reference_shows_the_sync_types_and_no_await() -> None:
    found = subprocess.run(
        [sys.executable, "-c", SYNC_SIGNATURES],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    shown = json.loads(found.stdout)
    assert shown["returns"] == {
        "Client.table": "Table",
        "Client.create_bucket": "Bucket",
        "TableQuery.where": "TableQuery",
        "Table.iter_batches": "Iterator[pd.DataFrame | pa.RecordBatch]",
    }
    assert shown["awaiting"] == []
